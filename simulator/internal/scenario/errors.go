package scenario

import (
	"fmt"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// errs collects the problems of a scenario file during validation, as
// strictyaml.FieldErrors (the decoder's type: decoding and validation
// errors read alike, and Parse locates both in the file).
type errs []*strictyaml.FieldError

// add records a problem with the value v at path.
func (e *errs) add(path string, v any, format string, args ...any) {
	*e = append(*e, strictyaml.Field(path, v, fmt.Sprintf(format, args...)))
}
