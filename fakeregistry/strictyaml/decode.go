// Package strictyaml decodes a YAML document into a Go struct strictly and says, for every bad
// field at once, where it is (file, line, column, field path), what it holds and what is wrong.
// The fake registry's catalogs and the simulator's scenarios both decode with it.
//
// Decoding itself is sigs.k8s.io/yaml's UnmarshalStrict (json tags, the Kubernetes API types'
// own unmarshalers, duplicate keys refused). Before it, Decode walks the go.yaml.in/yaml/v3 node
// tree alongside the target type. That walk is hand-written because none of the libraries
// gives the errors users need: sigs.k8s.io/yaml stops at the first error, without line or list
// index, and matches keys case-insensitively (encoding/json); go.yaml.in/yaml/v3's KnownFields
// reads yaml tags only (the operator's API types have json tags) and no json.Unmarshaler;
// github.com/goccy/go-yaml (v1.19) reads json tags but also stops at the first error and its
// errors carry no field path. The walk also refuses numbers and booleans for strings (YAML
// reads a tag 3.10 as the float 3.1), which every decoder converts silently.
package strictyaml

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

const reasonUnknownField = "unknown field"

// Options tune Decode.
type Options struct {
	// Describe words, for error messages, the types that decode themselves (json.Unmarshaler or
	// encoding.TextUnmarshaler), e.g. "a duration such as 200ms or 1m30s". A type without a
	// description reports its unmarshaler's error.
	Describe map[reflect.Type]string
}

// Decode decodes the YAML document data into out (a pointer to a struct). It returns the
// document's node tree (for Locate; nil when data is not YAML) and every error found, each
// located.
func Decode(data []byte, out any, o Options) (*yaml.Node, []*FieldError) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []*FieldError{yamlError(err)}
	}
	if len(root.Content) == 0 {
		return nil, []*FieldError{{Reason: "empty document"}}
	}
	w := walker{o: o}
	if errs := w.check(root.Content[0], reflect.TypeOf(out), ""); len(errs) > 0 {
		return &root, errs
	}
	if err := sigsyaml.UnmarshalStrict(data, out); err != nil {
		return &root, []*FieldError{yamlError(err)}
	}
	return &root, nil
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML parser or decoder error into a FieldError with its line.
func yamlError(err error) *FieldError {
	msg := strings.TrimPrefix(strings.Join(strings.Fields(err.Error()), " "), "error converting YAML to JSON: ")
	fe := &FieldError{Reason: "invalid YAML: " + msg}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		fe.Column = 1
	}
	return fe
}

// walker checks a node tree against a Go type.
type walker struct{ o Options }

// check walks n alongside t and reports unknown keys (matched exactly) and values of the wrong
// type, each with its path and position.
func (w walker) check(n *yaml.Node, t reflect.Type, path string) []*FieldError {
	n = resolve(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // null leaves the zero value
	}
	if desc, ok := w.o.Describe[t]; ok || selfDecoding(t) {
		return selfDecoded(n, t, path, desc)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return wrongType(n, path, "a mapping")
		}
		return w.mapping(n, jsonFields(t), nil, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return wrongType(n, path, "a mapping")
		}
		return w.mapping(n, nil, t.Elem(), path)
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return wrongType(n, path, "a list")
		}
		var errs []*FieldError
		for i, e := range n.Content {
			errs = append(errs, w.check(e, t.Elem(), IndexPath(path, i))...)
		}
		return errs
	}
	if n.Kind != yaml.ScalarNode {
		return wrongType(n, path, scalarWant(t.Kind()))
	}
	return checkScalar(n, t, path)
}

// mapping checks a mapping's entries: against fields for a struct, or elem for a map.
func (w walker) mapping(n *yaml.Node, fields map[string]reflect.Type, elem reflect.Type, path string) []*FieldError {
	var errs []*FieldError
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		ft := elem
		if fields != nil {
			var ok bool
			if ft, ok = fields[key.Value]; !ok {
				errs = append(errs, nodeErr(key, JoinPath(path, key.Value), decodedValue(val), reasonUnknownField+suggest(key.Value, fields)))
				continue
			}
		}
		errs = append(errs, w.check(val, ft, JoinPath(path, key.Value))...)
	}
	return errs
}

// selfDecoded checks a value of a type with its own decoder by decoding it.
func selfDecoded(n *yaml.Node, t reflect.Type, path, desc string) []*FieldError {
	var v any
	if err := n.Decode(&v); err != nil {
		return []*FieldError{nodeErr(n, path, scalarValue(n), err.Error())}
	}
	raw, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(raw, reflect.New(t).Interface())
	}
	if err == nil {
		return nil
	}
	reason := err.Error()
	if desc != "" {
		reason = "want " + desc
	}
	return []*FieldError{nodeErr(n, path, decodedValue(n), reason)}
}

func selfDecoding(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// checkScalar checks that a scalar's resolved YAML tag fits a Go type, and that a number fits
// its size.
func checkScalar(n *yaml.Node, t reflect.Type, path string) []*FieldError {
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.String:
		if tag != "!!str" {
			return []*FieldError{nodeErr(n, path, n.Value, fmt.Sprintf(
				"wrong type, want a string: YAML reads %s as %s; quote it: %q", n.Value, yamlTypeName(tag), n.Value))}
		}
	case reflect.Bool:
		if tag != "!!bool" {
			return wrongType(n, path, scalarWant(t.Kind()))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		// yaml.v3 refuses what does not fit the type: overflow, a negative unsigned.
		if tag != "!!int" || n.Decode(reflect.New(t).Interface()) != nil {
			return wrongType(n, path, scalarWant(t.Kind()))
		}
	case reflect.Float32, reflect.Float64:
		var f float64
		if (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return wrongType(n, path, scalarWant(t.Kind()))
		}
	}
	return nil
}

// nodeErr builds a FieldError located at n.
func nodeErr(n *yaml.Node, path, value, reason string) *FieldError {
	return &FieldError{Line: n.Line, Column: n.Column, Path: path, Value: value, Reason: reason}
}

func wrongType(n *yaml.Node, path, want string) []*FieldError {
	return []*FieldError{nodeErr(n, path, decodedValue(n), "wrong type, want "+want)}
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
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
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

// decodedValue renders a node's value as JSON; a number or boolean as written (1.10 stays
// 1.10), a collection decoded.
func decodedValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" {
		return n.Value
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return scalarValue(n)
	}
	return FormatValue(v)
}

// scalarValue is the source text of a scalar node, empty for collections.
func scalarValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// jsonFields maps the JSON names of a struct's fields to their types; embedded structs
// without a name are flattened, as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(fields, jsonFields(ft))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// suggest names a known field that differs from k only in case, or by one edit, as a hint for
// typos.
func suggest(k string, fields map[string]reflect.Type) string {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if strings.EqualFold(name, k) || EditDistance(name, k) == 1 {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return ""
}

// EditDistance is the optimal-string-alignment distance of two short strings: insertions,
// deletions, substitutions and transpositions of adjacent characters ("sede" for "seed") each
// cost one. Hand-written: a dozen lines, for name hints (fields here, metrics in scenarios).
func EditDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
