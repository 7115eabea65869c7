package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FieldError reports one invalid field of a declarative file (a registry catalog, a scenario):
// where it is, what it holds and what is wrong.
type FieldError struct {
	// File is the file name, empty for documents built in Go.
	File string
	// Line and Column locate the field (1-based); 0 when unknown.
	Line, Column int
	// Path is the field path, e.g. repositories[0].images[1].platforms[2].
	Path string
	// Value is the offending value, JSON-encoded (numbers and booleans as written).
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

// Field builds a FieldError for the value v at path.
func Field(path string, v any, reason string) *FieldError {
	return &FieldError{Path: path, Value: FormatValue(v), Reason: reason}
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

// Join sets File on every error (when file is not empty) and joins them; nil for none.
func Join(file string, errs []*FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	joined := make([]error, 0, len(errs))
	for _, e := range errs {
		if file != "" {
			e.File = file
		}
		joined = append(joined, e)
	}
	return errors.Join(joined...)
}

// FormatValue renders v compactly as JSON ("<" stays "<"), shortened when long; empty for nil.
func FormatValue(v any) string {
	if v == nil {
		return ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<" in checks must read as "<"
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	b := bytes.TrimSpace(buf.Bytes())
	const maxLen = 120
	if len(b) > maxLen {
		return string(b[:maxLen]) + "…"
	}
	return string(b)
}

// JoinPath appends a field name to a field path.
func JoinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// IndexPath appends a list index to a field path.
func IndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
