package scenario

import (
	"bytes"
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

	"github.com/archgate/archgate/fakeregistry"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// decodeStrict decodes YAML into out (a pointer to a struct). It rejects
// duplicate keys (sigs.k8s.io/yaml strict), unknown fields and values of the
// wrong type, each with its field path; a yaml.v3 node tree of the same
// document then gives every error its line (see locate).
func decodeStrict(data []byte, out any) (*yaml.Node, []*FieldError) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []*FieldError{yamlError(err)}
	}
	if len(root.Content) == 0 {
		return nil, []*FieldError{{Reason: "empty document"}}
	}
	j, err := sigsyaml.YAMLToJSONStrict(data)
	if err != nil {
		return &root, []*FieldError{yamlError(err)}
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return &root, []*FieldError{{Reason: fmt.Sprintf("invalid YAML: %v", err)}}
	}
	if _, ok := generic.(map[string]any); !ok {
		return &root, []*FieldError{{Value: formatValue(generic), Reason: "the document must be a mapping"}}
	}
	if errs := checkValue(generic, reflect.TypeOf(out), ""); len(errs) > 0 {
		return &root, withStringHints(&root, errs)
	}
	dec = json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		// checkValue should have caught it; keep the decoder's words.
		return &root, []*FieldError{{Reason: err.Error()}}
	}
	return &root, nil
}

// withStringHints rewords the errors of numbers and booleans given for strings as fakeregistry
// does, from the YAML source: the JSON the checks ran on has lost how the value was written
// (a tag 3.10 arrives as 3.1), so only the node can say "quote it: \"3.10\"".
func withStringHints(root *yaml.Node, errs []*FieldError) []*FieldError {
	for i, e := range errs {
		if e.Reason != wrongTypeReason("a string") {
			continue
		}
		if hint, ok := fakeregistry.StringError(root, e.Path); ok {
			errs[i] = hint
		}
	}
	return errs
}

// wrongTypeReason is the reason checkValue gives for a value of the wrong type.
func wrongTypeReason(want string) string {
	return "wrong type, want " + want
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML parser error into a FieldError with its line.
func yamlError(err error) *FieldError {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	fe := &FieldError{Reason: "invalid YAML: " + strings.Join(strings.Fields(msg), " ")}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		fe.Column = 1
	}
	return fe
}

// typeDescriptions words the types with their own decoders for error messages.
var typeDescriptions = map[reflect.Type]string{
	reflect.TypeFor[Duration]():          "a duration such as 200ms or 1m30s",
	reflect.TypeFor[metav1.Duration]():   "a duration such as 200ms or 1m30s",
	reflect.TypeFor[resource.Quantity](): "a quantity such as 500m, 2 or 128Gi",
}

// checkValue walks a decoded JSON value alongside the Go type it will be
// decoded into and reports unknown object keys (matched exactly, unlike
// encoding/json) and values of the wrong type, each with its full path.
func checkValue(v any, t reflect.Type, path string) []*FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return nil // null leaves the zero value
	}
	if desc, ok := typeDescriptions[t]; ok || implementsUnmarshaler(t) {
		return checkOwnDecoder(v, t, path, desc)
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkStruct(v, t, path)
	case reflect.Slice, reflect.Array:
		return checkList(v, t, path)
	case reflect.Map:
		return checkMap(v, t, path)
	}
	if want := scalarMismatch(v, t); want != "" {
		return []*FieldError{wrongType(v, path, want)}
	}
	return nil
}

func wrongType(v any, path, want string) *FieldError {
	return &FieldError{Path: path, Value: formatValue(v), Reason: wrongTypeReason(want)}
}

// checkOwnDecoder decodes v with the type's own decoder (durations, quantities, anything
// implementing an Unmarshaler); desc words the expected form, "" for the decoder's error.
func checkOwnDecoder(v any, t reflect.Type, path, desc string) []*FieldError {
	raw, _ := json.Marshal(v)
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		if desc == "" {
			desc = err.Error()
		} else {
			desc = "want " + desc
		}
		return []*FieldError{{Path: path, Value: formatValue(v), Reason: desc}}
	}
	return nil
}

// checkStruct checks a mapping against a struct: known keys only, each value checked.
func checkStruct(v any, t reflect.Type, path string) []*FieldError {
	obj, ok := v.(map[string]any)
	if !ok {
		return []*FieldError{wrongType(v, path, "a mapping")}
	}
	fields := jsonFields(t)
	var errs []*FieldError
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		ft, ok := fields[k]
		if !ok {
			errs = append(errs, &FieldError{Path: join(path, k), Value: formatValue(obj[k]), Reason: "unknown field" + suggest(k, fields)})
			continue
		}
		errs = append(errs, checkValue(obj[k], ft, join(path, k))...)
	}
	return errs
}

// checkList checks every element of a list.
func checkList(v any, t reflect.Type, path string) []*FieldError {
	list, ok := v.([]any)
	if !ok {
		return []*FieldError{wrongType(v, path, "a list")}
	}
	var errs []*FieldError
	for i, e := range list {
		errs = append(errs, checkValue(e, t.Elem(), index(path, i))...)
	}
	return errs
}

// checkMap checks every value of a mapping.
func checkMap(v any, t reflect.Type, path string) []*FieldError {
	obj, ok := v.(map[string]any)
	if !ok {
		return []*FieldError{wrongType(v, path, "a mapping")}
	}
	var errs []*FieldError
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		errs = append(errs, checkValue(obj[k], t.Elem(), join(path, k))...)
	}
	return errs
}

// scalarMismatch returns what a scalar of kind t.Kind() must look like when v does not fit it
// (wrong JSON type, or a number out of the type's range), "" when it fits.
func scalarMismatch(v any, t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return "a string"
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return "true or false"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return "an integer"
		}
		if i, err := n.Int64(); err != nil || reflect.New(t).Elem().OverflowInt(i) {
			return "an integer"
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return "a non-negative integer"
		}
		if u, err := strconv.ParseUint(n.String(), 10, 64); err != nil || reflect.New(t).Elem().OverflowUint(u) {
			return "a non-negative integer"
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return "a number"
		}
		if f, err := n.Float64(); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "a number"
		}
	}
	return ""
}

func implementsUnmarshaler(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// jsonFields maps the JSON names of a struct's fields to their types;
// embedded structs without a name are flattened, as encoding/json does.
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

// suggest names a known field that differs from k only in case, or by one
// edit, as a hint for typos.
func suggest(k string, fields map[string]reflect.Type) string {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if strings.EqualFold(name, k) || editDistance(name, k) == 1 {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return ""
}

// editDistance is the optimal-string-alignment distance of two short
// strings: insertions, deletions, substitutions and transpositions of
// adjacent characters ("sede" for "seed") each cost one.
func editDistance(a, b string) int {
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

// locate finds the line and column of path in the node tree (see fakeregistry.LocateYAML).
func locate(root *yaml.Node, path string, keyOnly bool) (line, col int) {
	return fakeregistry.LocateYAML(root, path, keyOnly)
}
