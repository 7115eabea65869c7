package fakeregistry

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Distribution-spec error codes the registry returns.
const (
	codeUnauthorized      = "UNAUTHORIZED"
	codeDenied            = "DENIED"
	codeTooManyRequests   = "TOOMANYREQUESTS"
	codeUnavailable       = "UNAVAILABLE"
	codeInternal          = "INTERNAL_ERROR"
	codeUnsupported       = "UNSUPPORTED"
	codeNameInvalid       = "NAME_INVALID"
	codeNameUnknown       = "NAME_UNKNOWN"
	codeManifestUnknown   = "MANIFEST_UNKNOWN"
	codeManifestInvalid   = "MANIFEST_INVALID"
	codeManifestBlob      = "MANIFEST_BLOB_UNKNOWN"
	codeBlobUnknown       = "BLOB_UNKNOWN"
	codeBlobUploadUnknown = "BLOB_UPLOAD_UNKNOWN"
	codeBlobUploadInvalid = "BLOB_UPLOAD_INVALID"
	codeDigestInvalid     = "DIGEST_INVALID"
	codeSizeInvalid       = "SIZE_INVALID"
	codeTagInvalid        = "TAG_INVALID"
	codeMethodUnknown     = "METHOD_UNKNOWN"
	codePaginationNumber  = "PAGINATION_NUMBER_INVALID"
	// codeRangeInvalid has no distribution-spec code; the spec only names the 416 status.
	codeRangeInvalid = "RANGE_INVALID"
)

// errPaginationNumber is returned for an n query parameter that is not a non-negative integer.
var errPaginationNumber = errors.New("n must be a non-negative integer")

// registryError is one entry of a distribution-spec error body.
type registryError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeRegistryError writes a distribution-spec JSON error body with status.
func writeRegistryError(w http.ResponseWriter, status int, code, message string) {
	body, err := json.Marshal(struct {
		Errors []registryError `json:"errors"`
	}{Errors: []registryError{{Code: code, Message: message}}})
	if err != nil {
		// Marshalling two strings cannot fail; keep the status anyway.
		body = []byte(`{"errors":[]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSON writes v as a 200 JSON body of contentType.
func writeJSON(w http.ResponseWriter, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeRegistryError(w, http.StatusInternalServerError, codeInternal, "encoding response failed")
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// jsonErrors makes every error response of next a distribution-spec JSON body: go-containerregistry's
// upload errors are JSON without a Content-Type, and net/http's (http.ServeContent's 416) are
// text/plain.
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
	})
}

// jsonErrorWriter fixes the Content-Type of error responses and replaces plain-text error bodies.
type jsonErrorWriter struct {
	http.ResponseWriter
	// replaced is set when the body was replaced; later writes are dropped.
	replaced bool
}

// WriteHeader fixes error responses before they go out.
func (j *jsonErrorWriter) WriteHeader(status int) {
	if status < http.StatusBadRequest || j.replaced {
		j.ResponseWriter.WriteHeader(status)
		return
	}
	h := j.Header()
	switch ct := h.Get("Content-Type"); {
	case ct == "":
		h.Set("Content-Type", "application/json")
	case strings.HasPrefix(ct, "text/plain"):
		j.replaced = true
		h.Del("X-Content-Type-Options")
		code := codeUnsupported
		if status == http.StatusRequestedRangeNotSatisfiable {
			code = codeRangeInvalid
		}
		writeRegistryError(j.ResponseWriter, status, code, strings.ToLower(http.StatusText(status)))
		return
	}
	j.ResponseWriter.WriteHeader(status)
}

// Write drops the plain-text body of a replaced error.
func (j *jsonErrorWriter) Write(b []byte) (int, error) {
	if j.replaced {
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (j *jsonErrorWriter) Unwrap() http.ResponseWriter {
	return j.ResponseWriter
}
