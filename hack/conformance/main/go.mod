// Build-only module for make test-conformance, outside go.work: the OCI distribution-spec
// conformance suite of the spec's main branch (rewritten as a program in 2026), built into
// bin/conformance-main. Change the pin with
// `GOWORK=off GOFLAGS= go get -tool github.com/opencontainers/distribution-spec/conformance@<version>`.
module github.com/archgate/archgate/hack/conformance/main

go 1.26.0

tool github.com/opencontainers/distribution-spec/conformance

require (
	github.com/goccy/go-yaml v1.18.0 // indirect
	github.com/opencontainers/distribution-spec/conformance v0.0.0-20260831232431-97274622c111 // indirect
	github.com/opencontainers/distribution-spec/specs-go v0.0.0-20240926185104-8376368dd8aa // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
