//go:build tools

// Package ginkgo pins the OCI distribution-spec conformance suite in its Ginkgo form for
// make test-conformance, which builds the suite's test binary with go test -c. The blank import
// keeps go mod tidy from dropping the pin.
package ginkgo

import _ "github.com/opencontainers/distribution-spec/conformance"
