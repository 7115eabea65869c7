package fakeregistry

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// FieldError reports one invalid field of a declarative file (a catalog here, a scenario in the
// simulator): where it is, what it holds and what is wrong.
type FieldError struct {
	// File is the file name, empty for catalogs built in Go.
	File string
	// Line and Column locate the field (1-based); 0 when unknown. Catalog decoding leaves them 0;
	// the simulator's scenario decoder sets them.
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

// decodeStrict decodes YAML into out, rejecting unknown fields, duplicate keys and wrong types. Unknown
// fields are reported with their full path, which the JSON decoder alone cannot do.
func decodeStrict(data []byte, out any) []*FieldError {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return []*FieldError{{Reason: fmt.Sprintf("invalid YAML: %v", err)}}
	}
	var generic any
	if err := json.Unmarshal(j, &generic); err != nil {
		return []*FieldError{{Reason: fmt.Sprintf("invalid YAML: %v", err)}}
	}
	if errs := unknownFields(generic, reflect.TypeOf(out), ""); len(errs) > 0 {
		return errs
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return []*FieldError{{
				Path:   typeErr.Field,
				Value:  typeErr.Value,
				Reason: fmt.Sprintf("wrong type, want %s", typeErr.Type),
			}}
		}
		return []*FieldError{{Reason: err.Error()}}
	}
	return nil
}

// unknownFields walks a decoded JSON value alongside the Go type it will be decoded into and reports
// every object key that has no matching json tag (matched exactly, unlike encoding/json).
func unknownFields(v any, t reflect.Type, path string) []*FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return nil
	}
	var errs []*FieldError
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			ft, ok := fields[k]
			if !ok {
				errs = append(errs, fieldErr(joinPath(path, k), obj[k], "unknown field"))
				continue
			}
			errs = append(errs, unknownFields(obj[k], ft, joinPath(path, k))...)
		}
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, e := range list {
			errs = append(errs, unknownFields(e, t.Elem(), indexPath(path, i))...)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			errs = append(errs, unknownFields(obj[k], t.Elem(), joinPath(path, k))...)
		}
	}
	return errs
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
