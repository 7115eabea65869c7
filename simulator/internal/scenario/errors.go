package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/archgate/archgate/fakeregistry"
)

// FieldError is one problem of a scenario file: file, line and column, field
// path (e.g. workload.arrival.steps[1].rate), the offending value and what is
// wrong. It is the fake registry's type, so catalog errors inside a scenario
// need no conversion beyond prefixing their path.
type FieldError = fakeregistry.FieldError

// FieldErrors returns the FieldErrors inside err (which may join several).
func FieldErrors(err error) []*FieldError { return fakeregistry.FieldErrors(err) }

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
