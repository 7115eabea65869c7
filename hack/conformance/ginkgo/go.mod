// Build-only module for make test-conformance, outside go.work: the OCI distribution-spec
// conformance suite as the spec shipped it through v1.1.1, a Ginkgo test package built with
// go test -c into bin/conformance-ginkgo.test. The pin is commit f2182352d4cc (2023-11-01,
// v1.1.0-rc.3 plus 21 commits), the commit of that suite the module proxy here serves: v1.1.1
// itself (a139cc423184) is not served. Between the two the suite came to accept 405 and 404 on
// blob deletes and 404 on tag lists, tore down manifests by digest, and tested referrers to a
// missing subject and annotations pulled up into the referrers list; the main-branch suite
// (../main) tests the last two as well. Change the pin with
// `GOWORK=off GOFLAGS= go get github.com/opencontainers/distribution-spec/conformance@<version> && go mod tidy`.
module github.com/archgate/archgate/hack/conformance/ginkgo

go 1.26.0

require github.com/opencontainers/distribution-spec/conformance v0.0.0-20231101194043-f2182352d4cc

require (
	github.com/asaskevich/govalidator v0.0.0-20230301143203-a9d515a09cc2 // indirect
	github.com/bloodorangeio/reggie v0.6.1 // indirect
	github.com/go-logr/logr v1.2.4 // indirect
	github.com/go-resty/resty/v2 v2.7.0 // indirect
	github.com/go-task/slim-sprig v0.0.0-20230315185526-52ccab3ef572 // indirect
	github.com/google/pprof v0.0.0-20230602150820-91b7bce49751 // indirect
	github.com/google/uuid v1.3.0 // indirect
	github.com/mitchellh/mapstructure v1.5.0 // indirect
	github.com/onsi/ginkgo/v2 v2.11.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	golang.org/x/net v0.11.0 // indirect
	golang.org/x/sys v0.9.0 // indirect
	golang.org/x/tools v0.10.0 // indirect
)
