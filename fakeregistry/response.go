package fakeregistry

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Distribution-spec error codes the registry's own layers return.
const (
	codeUnauthorized    = "UNAUTHORIZED"
	codeDenied          = "DENIED"
	codeTooManyRequests = "TOOMANYREQUESTS"
	codeUnavailable     = "UNAVAILABLE"
	codeInternal        = "INTERNAL_ERROR"
	codeUnsupported     = "UNSUPPORTED"
)

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
