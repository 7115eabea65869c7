package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FieldError is one problem of a scenario file: where it is (file, line,
// field path), the offending value and what is wrong.
type FieldError struct {
	// File is the scenario file as given to Load.
	File string
	// Line and Column locate the field (1-based); 0 when unknown.
	Line, Column int
	// Path is the field path, e.g. workload.arrival.steps[1].rate.
	Path string
	// Value is the offending value, JSON-encoded and shortened.
	Value string
	// Reason says what is wrong.
	Reason string
}

// Error formats the error as "file:line:column: path: reason (value V)".
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

// FieldErrors returns the FieldErrors inside err (which may join several).
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

// errs collects FieldErrors during validation.
type errs []*FieldError

// add records a problem with the value v at path.
func (e *errs) add(path string, v any, format string, args ...any) {
	*e = append(*e, &FieldError{Path: path, Value: formatValue(v), Reason: fmt.Sprintf(format, args...)})
}

// formatValue renders v compactly as JSON, shortened when long.
func formatValue(v any) string {
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

// join appends a field name to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// index appends a list index to a path.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// joinErrors turns collected FieldErrors into one error, or nil.
func joinErrors(list []*FieldError) error {
	if len(list) == 0 {
		return nil
	}
	all := make([]error, len(list))
	for i, e := range list {
		all[i] = e
	}
	return errors.Join(all...)
}
