package fakeregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// FieldError reports one invalid field of a declarative file (a catalog here, a scenario in the
// simulator): where it is, what it holds and what is wrong.
type FieldError struct {
	// File is the file name, empty for catalogs built in Go.
	File string
	// Line and Column locate the field (1-based); 0 when unknown (catalogs built in Go).
	Line, Column int
	// Path is the field path, e.g. repositories[0].images[1].platforms[2].
	Path string
	// Value is the offending value, JSON-encoded.
	Value string
	// Reason says what is wrong with the value.
	Reason string
}

// Error formats the error as "file[:line:column]: path: reason (value V)".
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Value != "" {
		b.WriteString(" (value ")
		b.WriteString(e.Value)
		b.WriteString(")")
	}
	return b.String()
}

// FieldErrors returns every FieldError inside err (which may join several), in order.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// fieldErr builds a FieldError for the value v at path.
func fieldErr(path string, v any, reason string) *FieldError {
	return &FieldError{Path: path, Value: formatValue(v), Reason: reason}
}

// formatValue renders v compactly as JSON, shortened when long.
func formatValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	const maxLen = 120
	if len(b) > maxLen {
		return string(b[:maxLen]) + "…"
	}
	return string(b)
}

// joinPath appends a field name to a field path.
func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// indexPath appends a list index to a field path.
func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// withFile sets File on every FieldError in errs and joins them.
func withFile(file string, errs []*FieldError) error {
	joined := make([]error, 0, len(errs))
	for _, e := range errs {
		e.File = file
		joined = append(joined, e)
	}
	return errors.Join(joined...)
}

// decodeStrict decodes YAML into out, rejecting unknown fields, duplicate keys and wrong types. It
// checks the yaml.v3 node tree against out's type first, so every error has its full path (list
// indices included), line and column, and a scalar YAML would read as a number or boolean is refused
// for a string field instead of silently converted (3.10 would become "3.1", 010 "8", true "true").
func decodeStrict(data []byte, out any) (*yaml.Node, []*FieldError) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []*FieldError{yamlError(err)}
	}
	if len(root.Content) > 0 {
		if errs := checkNode(root.Content[0], reflect.TypeOf(out), ""); len(errs) > 0 {
			return &root, errs
		}
	}
	if err := sigsyaml.UnmarshalStrict(data, out); err != nil {
		return &root, []*FieldError{yamlError(err)}
	}
	return &root, nil
}

// LocateYAML finds the line and column of a field path (a.b[2].c) in a yaml.v3 node tree: the key
// of a mapping entry when keyOnly (unknown fields), otherwise the value. When the full path is
// missing (a defaulted field) it returns the deepest ancestor found; 0, 0 for a nil root.
func LocateYAML(root *yaml.Node, path string, keyOnly bool) (line, col int) {
	if root == nil {
		return 0, 0
	}
	key, n, _ := walkYAML(root, path)
	if keyOnly && key != nil {
		return key.Line, key.Column
	}
	return n.Line, n.Column
}

// StringError is the error fakeregistry's decoder gives when the YAML value at path is a number or
// boolean where a string is wanted: the value as written, its position and a hint to quote it. It
// is for decoders that check a JSON form of the document, where 3.10 has already become 3.1; ok is
// false when the value at path is missing or not such a scalar.
func StringError(root *yaml.Node, path string) (e *FieldError, ok bool) {
	if root == nil {
		return nil, false
	}
	_, n, found := walkYAML(root, path)
	for found && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if !found || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!str" || n.ShortTag() == "!!null" {
		return nil, false
	}
	return notStringErr(n, path), true
}

// walkYAML follows path from root and returns the deepest node reached with its mapping key (nil
// for list elements and the root), and whether the whole path was found.
func walkYAML(root *yaml.Node, path string) (key, n *yaml.Node, found bool) {
	n = root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, seg := range splitPath(path) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		k, next := child(n, seg)
		if next == nil {
			return key, n, false
		}
		key, n = k, next
	}
	return key, n, true
}

// child returns the key and value node of one path segment below n, nil when absent.
func child(n *yaml.Node, seg pathSegment) (key, value *yaml.Node) {
	switch {
	case seg.isIndex && n.Kind == yaml.SequenceNode && seg.index < len(n.Content):
		return nil, n.Content[seg.index]
	case !seg.isIndex && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg.name {
				key, value = n.Content[i], n.Content[i+1]
			}
		}
	}
	return key, value
}

// pathSegment is one field name or list index of a field path.
type pathSegment struct {
	name    string
	index   int
	isIndex bool
}

// splitPath splits "a.b[2].c" into a, b, [2], c.
func splitPath(path string) []pathSegment {
	var out []pathSegment
	for part := range strings.SplitSeq(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, pathSegment{name: name})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			if !ok {
				break
			}
			if i, err := strconv.Atoi(num); err == nil {
				out = append(out, pathSegment{index: i, isIndex: true})
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

// locateAll sets the position of every error that has none from root.
func locateAll(root *yaml.Node, errs []*FieldError) []*FieldError {
	for _, e := range errs {
		if e.Line == 0 {
			e.Line, e.Column = LocateYAML(root, e.Path, strings.HasPrefix(e.Reason, "unknown field"))
		}
	}
	return errs
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML parser error into a FieldError with its line.
func yamlError(err error) *FieldError {
	msg := strings.TrimPrefix(strings.Join(strings.Fields(err.Error()), " "), "error converting YAML to JSON: ")
	fe := &FieldError{Reason: "invalid YAML: " + msg}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		fe.Column = 1
	}
	return fe
}

// nodeErr builds a FieldError located at n.
func nodeErr(n *yaml.Node, path, value, reason string) *FieldError {
	return &FieldError{Line: n.Line, Column: n.Column, Path: path, Value: value, Reason: reason}
}

// checkNode walks a YAML node alongside the Go type it will be decoded into and reports unknown keys
// (matched exactly, unlike encoding/json) and values of the wrong type, each with path and position.
func checkNode(n *yaml.Node, t reflect.Type, path string) []*FieldError {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // null leaves the zero value
	}
	wrong := func(want string) []*FieldError {
		return []*FieldError{nodeErr(n, path, scalarValue(n), "wrong type, want "+want)}
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return wrong("a mapping")
		}
		return checkMapping(n, jsonFields(t), nil, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return wrong("a mapping")
		}
		return checkMapping(n, nil, t.Elem(), path)
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return wrong("a list")
		}
		var errs []*FieldError
		for i, e := range n.Content {
			errs = append(errs, checkNode(e, t.Elem(), indexPath(path, i))...)
		}
		return errs
	}
	if n.Kind != yaml.ScalarNode {
		return wrong(scalarWant(t.Kind()))
	}
	return checkScalar(n, t.Kind(), path)
}

// checkMapping checks a mapping's entries: against fields for a struct, or elem for a map.
func checkMapping(n *yaml.Node, fields map[string]reflect.Type, elem reflect.Type, path string) []*FieldError {
	var errs []*FieldError
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		ft := elem
		if fields != nil {
			var ok bool
			if ft, ok = fields[key.Value]; !ok {
				errs = append(errs, nodeErr(key, joinPath(path, key.Value), decodedValue(val), "unknown field"))
				continue
			}
		}
		errs = append(errs, checkNode(val, ft, joinPath(path, key.Value))...)
	}
	return errs
}

// checkScalar checks that a scalar's resolved YAML tag fits a Go kind.
func checkScalar(n *yaml.Node, kind reflect.Kind, path string) []*FieldError {
	tag := n.ShortTag()
	ok := true
	switch kind {
	case reflect.String:
		if tag != "!!str" {
			return []*FieldError{notStringErr(n, path)}
		}
	case reflect.Bool:
		ok = tag == "!!bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		ok = tag == "!!int"
	case reflect.Float32, reflect.Float64:
		ok = tag == "!!int" || tag == "!!float"
	}
	if !ok {
		return []*FieldError{nodeErr(n, path, n.Value, "wrong type, want "+scalarWant(kind))}
	}
	return nil
}

// notStringErr refuses a number or boolean scalar where a string is wanted, with a hint to quote it.
func notStringErr(n *yaml.Node, path string) *FieldError {
	return nodeErr(n, path, n.Value, fmt.Sprintf(
		"wrong type, want a string: YAML reads %s as %s; quote it: %q", n.Value, yamlTypeName(n.ShortTag()), n.Value))
}

// scalarWant words the value a scalar kind needs.
func scalarWant(kind reflect.Kind) string {
	switch kind {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "an integer"
}

// yamlTypeName names a YAML core-schema tag for error messages.
func yamlTypeName(tag string) string {
	switch tag {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a float"
	case "!!bool":
		return "a boolean"
	}
	return tag
}

// decodedValue renders a node's decoded value as JSON, for unknown fields.
func decodedValue(n *yaml.Node) string {
	var v any
	if err := n.Decode(&v); err != nil {
		return scalarValue(n)
	}
	return formatValue(v)
}

// scalarValue is the source text of a scalar node, empty for collections.
func scalarValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// jsonFields maps the JSON names of a struct's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
