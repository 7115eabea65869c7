package fakeregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// rawResponse is what a test reads back from one HTTP request.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// do sends method path with headers to reg and reads the whole response.
func do(t *testing.T, reg *Registry, method, path string, header http.Header, body io.Reader) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, reg.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := httpClient(reg).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s %s: %v", method, path, err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// errorCode returns the first code of a JSON error body, failing unless the body is JSON.
func errorCode(t *testing.T, r rawResponse) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json (body %q)", ct, r.body)
	}
	var body struct {
		Errors []registryError `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || len(body.Errors) == 0 {
		t.Fatalf("error body %q is not a distribution-spec error (%v)", r.body, err)
	}
	return body.Errors[0].Code
}

// platformManifest returns the descriptor of the os/arch entry of a catalog list image.
func platformManifest(t *testing.T, reg *Registry, ref, os, arch string) v1.Descriptor {
	t.Helper()
	r, err := name.ParseReference(reg.Host() + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("remote.Index %s: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == os && d.Platform.Architecture == arch {
			return d
		}
	}
	t.Fatalf("%s has no %s/%s entry", ref, os, arch)
	return v1.Descriptor{}
}

// singleManifestClient makes go-containerregistry's remote behave like an old client: its manifest
// requests accept only single manifests (Docker schema 2 and OCI), no index or list.
type singleManifestClient struct {
	next http.RoundTripper
}

// RoundTrip narrows the Accept header of manifest requests.
func (c singleManifestClient) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/manifests/") {
		r = r.Clone(r.Context())
		r.Header.Set("Accept", string(types.DockerManifestSchema2)+", "+string(types.OCIManifestSchema1))
	}
	return c.next.RoundTrip(r)
}

// TestNegotiationWithSingleManifestClient pulls list images with go-containerregistry's remote
// narrowed to single manifests.
func TestNegotiationWithSingleManifestClient(t *testing.T) {
	tests := map[string]struct {
		negotiation Negotiation
		ref         string
		wantCode    transport.ErrorCode // empty: served the linux/amd64 manifest
	}{
		"distribution serves linux/amd64 of an index": {negotiation: NegotiateDefaultPlatform, ref: "library/multi:latest"},
		"distribution serves linux/amd64 of a list":   {negotiation: NegotiateDefaultPlatform, ref: "team/dockerlist:v2"},
		"registry without fallback":                   {negotiation: NegotiateNotFound, ref: "library/multi:latest", wantCode: transport.ManifestUnknownErrorCode},
	}
	for tcName, tc := range tests {
		t.Run(tcName, func(t *testing.T) {
			spec := testSpec(t)
			spec.Negotiation = tc.negotiation
			reg := startRegistry(t, Options{Catalog: mustCatalog(t, spec)})
			ref, err := name.ParseReference(reg.Host() + "/" + tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			img, err := remote.Image(ref, remote.WithContext(t.Context()),
				remote.WithTransport(singleManifestClient{next: http.DefaultTransport}))
			if tc.wantCode != "" {
				var terr *transport.Error
				if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound || terr.Errors[0].Code != tc.wantCode {
					t.Fatalf("remote.Image error = %v, want 404 %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("remote.Image: %v", err)
			}
			got, err := img.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if want := platformManifest(t, reg, tc.ref, "linux", "amd64").Digest; got != want {
				t.Errorf("digest = %s, want the linux/amd64 manifest %s", got, want)
			}
		})
	}
}

// TestNegotiationOnTheWire checks statuses and media types for raw Accept headers.
func TestNegotiationOnTheWire(t *testing.T) {
	schema2 := string(types.DockerManifestSchema2)
	tests := map[string]struct {
		path, accept  string
		wantStatus    int
		wantMediaType string
	}{
		"schema2-only client, oci index with amd64":   {path: "library/multi/manifests/latest", accept: schema2, wantStatus: 404},
		"schema2-only client, docker list with amd64": {path: "team/dockerlist/manifests/v2", accept: schema2, wantStatus: 200, wantMediaType: schema2},
		"schema2-only client, single oci manifest":    {path: "team/app/api/manifests/v1", accept: schema2, wantStatus: 404},
		"no Accept header gets what is stored":        {path: "library/multi/manifests/latest", wantStatus: 200, wantMediaType: string(types.OCIImageIndex)},
	}
	reg := startRegistry(t, Options{})
	for tcName, tc := range tests {
		t.Run(tcName, func(t *testing.T) {
			h := http.Header{}
			if tc.accept != "" {
				h.Set("Accept", tc.accept)
			}
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				r := do(t, reg, method, "/v2/"+tc.path, h, nil)
				if r.status != tc.wantStatus {
					t.Fatalf("%s status = %d, want %d (%s)", method, r.status, tc.wantStatus, r.body)
				}
				if tc.wantStatus == 404 && method == http.MethodGet {
					if code := errorCode(t, r); code != codeManifestUnknown {
						t.Errorf("code = %s, want %s", code, codeManifestUnknown)
					}
				}
				if tc.wantMediaType != "" && r.header.Get("Content-Type") != tc.wantMediaType {
					t.Errorf("%s Content-Type = %q, want %q", method, r.header.Get("Content-Type"), tc.wantMediaType)
				}
			}
		})
	}
}

// TestBlobRanges checks RFC 9110 byte ranges on a blob.
func TestBlobRanges(t *testing.T) {
	reg := startRegistry(t, Options{})
	d := configDigest(t, reg, "team/app/api:v1")
	full := do(t, reg, http.MethodGet, "/v2/team/app/api/blobs/"+d, nil, nil)
	if full.status != 200 {
		t.Fatalf("full GET status %d", full.status)
	}
	n := len(full.body)
	tests := map[string]struct {
		rangeHeader      string
		wantStatus       int
		wantContentRange string
		wantBody         string
	}{
		"closed":               {rangeHeader: "bytes=0-9", wantStatus: 206, wantContentRange: contentRange(0, 9, n), wantBody: full.body[:10]},
		"open-ended":           {rangeHeader: "bytes=100-", wantStatus: 206, wantContentRange: contentRange(100, n-1, n), wantBody: full.body[100:]},
		"suffix":               {rangeHeader: "bytes=-10", wantStatus: 206, wantContentRange: contentRange(n-10, n-1, n), wantBody: full.body[n-10:]},
		"end past the blob":    {rangeHeader: "bytes=5-100000", wantStatus: 206, wantContentRange: contentRange(5, n-1, n), wantBody: full.body[5:]},
		"start past the blob":  {rangeHeader: "bytes=100000-", wantStatus: 416, wantContentRange: "bytes */" + strconv.Itoa(n)},
		"malformed is ignored": {rangeHeader: "pages=1-2", wantStatus: 200, wantBody: full.body},
	}
	for tcName, tc := range tests {
		t.Run(tcName, func(t *testing.T) {
			r := do(t, reg, http.MethodGet, "/v2/team/app/api/blobs/"+d, http.Header{"Range": {tc.rangeHeader}}, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", r.status, tc.wantStatus, r.body)
			}
			if got := r.header.Get("Content-Range"); got != tc.wantContentRange {
				t.Errorf("Content-Range = %q, want %q", got, tc.wantContentRange)
			}
			if tc.wantStatus == 416 {
				if code := errorCode(t, r); code != codeRangeInvalid {
					t.Errorf("code = %s, want %s", code, codeRangeInvalid)
				}
				return
			}
			if r.body != tc.wantBody {
				t.Errorf("body differs: got %d bytes, want %d", len(r.body), len(tc.wantBody))
			}
		})
	}
}

// TestErrorsAreJSONWithTheRightCodes checks error statuses and codes across endpoints.
func TestErrorsAreJSONWithTheRightCodes(t *testing.T) {
	reg := startRegistry(t, Options{})
	foreign := configDigest(t, reg, "library/multi:latest")
	tests := map[string]struct {
		method, path string
		wantStatus   int
		wantCode     string
	}{
		"blob not a digest":             {method: "GET", path: "/v2/team/app/api/blobs/notadigest", wantStatus: 400, wantCode: codeDigestInvalid},
		"blob of another repository":    {method: "GET", path: "/v2/team/app/api/blobs/" + foreign, wantStatus: 404, wantCode: codeBlobUnknown},
		"blob head of other repository": {method: "HEAD", path: "/v2/team/app/api/blobs/" + foreign, wantStatus: 404},
		"blob of an unknown repository": {method: "GET", path: "/v2/no/such/blobs/" + foreign, wantStatus: 404, wantCode: codeBlobUnknown},
		"unknown repository":            {method: "GET", path: "/v2/no/such/manifests/latest", wantStatus: 404, wantCode: codeNameUnknown},
		"unknown tag":                   {method: "GET", path: "/v2/team/app/api/manifests/v9", wantStatus: 404, wantCode: codeManifestUnknown},
		"invalid repository name":       {method: "GET", path: "/v2/Team/manifests/v1", wantStatus: 400, wantCode: codeNameInvalid},
		"tags of unknown repository":    {method: "GET", path: "/v2/no/such/tags/list", wantStatus: 404, wantCode: codeNameUnknown},
		"bad page size":                 {method: "GET", path: "/v2/_catalog?n=-3", wantStatus: 400, wantCode: codePaginationNumber},
		"referrers of not a digest":     {method: "GET", path: "/v2/library/multi/referrers/latest", wantStatus: 400, wantCode: codeDigestInvalid},
		"read-only":                     {method: "POST", path: "/v2/team/app/api/blobs/uploads/", wantStatus: 405, wantCode: codeUnsupported},
		"unknown endpoint":              {method: "GET", path: "/v2/team/app/api/nothing/here", wantStatus: 404, wantCode: codeMethodUnknown},
	}
	for tcName, tc := range tests {
		t.Run(tcName, func(t *testing.T) {
			r := do(t, reg, tc.method, tc.path, nil, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", r.status, tc.wantStatus, r.body)
			}
			if tc.wantCode != "" {
				if code := errorCode(t, r); code != tc.wantCode {
					t.Errorf("code = %s, want %s", code, tc.wantCode)
				}
			}
		})
	}
}

// TestCatalogPagesWithGGCR pages through _catalog with go-containerregistry, which follows Link
// headers, and checks order, stability and the auth filter.
func TestCatalogPagesWithGGCR(t *testing.T) {
	reg := startRegistry(t, Options{Auth: testAuth(AuthBasic)})
	registryName, err := name.NewRegistry(reg.Host())
	if err != nil {
		t.Fatal(err)
	}
	list := func(user, pass string) []string {
		t.Helper()
		repos, err := remote.Catalog(t.Context(), registryName,
			remote.WithAuth(&authn.Basic{Username: user, Password: pass}), remote.WithPageSize(3))
		if err != nil {
			t.Fatalf("remote.Catalog as %s: %v", user, err)
		}
		return repos
	}
	var want []string
	for _, im := range reg.Catalog().Images() {
		want = append(want, im.Repository)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, list("alice", "alice-secret")); diff != "" {
		t.Errorf("alice's catalog (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, list("alice", "alice-secret")); diff != "" {
		t.Errorf("second listing differs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"library/multi", "team/app/api", "team/dockerlist"}, list("bob", "bob-secret")); diff != "" {
		t.Errorf("bob's catalog (-want +got):\n%s", diff)
	}
	page, err := remote.CatalogPage(registryName, "library/multi", 2,
		remote.WithAuth(&authn.Basic{Username: "alice", Password: "alice-secret"}))
	if err != nil {
		t.Fatalf("CatalogPage: %v", err)
	}
	if diff := cmp.Diff([]string{"operators/bundle", "team/app/api"}, page); diff != "" {
		t.Errorf("page after library/multi (-want +got):\n%s", diff)
	}
}

// TestReferrers lists the attestations of each platform manifest through the referrers API and its
// tag-schema fallback with go-containerregistry.
func TestReferrers(t *testing.T) {
	reg := startRegistry(t, Options{})
	subject := platformManifest(t, reg, "library/multi:latest", "linux", "arm64")
	d, err := name.NewDigest(reg.Host() + "/library/multi@" + subject.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Referrers(d, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("remote.Referrers: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].ArtifactType != AttestationArtifactType {
		t.Fatalf("referrers = %+v, want one %s", im.Manifests, AttestationArtifactType)
	}
	att := im.Manifests[0].Digest
	if got := platformManifest(t, reg, "library/multi:latest", "unknown", "unknown"); !hasAttestationFor(t, reg, subject.Digest, att) {
		t.Errorf("referrer %s is not the index's attestation entry for %s (first unknown entry %s)", att, subject.Digest, got.Digest)
	}
	tag, err := name.NewTag(reg.Host() + "/library/multi:" + referrersTagOf(subject.Digest))
	if err != nil {
		t.Fatal(err)
	}
	fallback, err := remote.Index(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("fallback tag: %v", err)
	}
	fm, err := fallback.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(im.Manifests, fm.Manifests); diff != "" {
		t.Errorf("fallback tag differs from the referrers API (-api +tag):\n%s", diff)
	}
	r := do(t, reg, http.MethodGet, "/v2/library/multi/referrers/"+subject.Digest.String()+"?artifactType=application/example", nil, nil)
	if r.status != 200 || r.header.Get("OCI-Filters-Applied") != "artifactType" || !strings.Contains(r.body, `"manifests":[]`) {
		t.Errorf("filtered referrers = %d %v %s, want 200, OCI-Filters-Applied and no manifests", r.status, r.header, r.body)
	}
	if r.header.Get("Content-Type") != string(types.OCIImageIndex) {
		t.Errorf("Content-Type = %q, want an OCI index", r.header.Get("Content-Type"))
	}
}

// hasAttestationFor reports whether the library/multi index lists att as the attestation of subject.
func hasAttestationFor(t *testing.T, reg *Registry, subject, att v1.Hash) bool {
	t.Helper()
	r := do(t, reg, http.MethodGet, "/v2/library/multi/manifests/latest", nil, nil)
	var idx v1.IndexManifest
	if err := json.Unmarshal([]byte(r.body), &idx); err != nil {
		t.Fatal(err)
	}
	for _, d := range idx.Manifests {
		if d.Digest == att && d.Annotations[AttestationReferenceDigestAnnotation] == subject.String() {
			return true
		}
	}
	return false
}

// testSpec decodes the sample catalog's spec, for tests that change it.
func testSpec(t *testing.T) CatalogSpec {
	t.Helper()
	data, err := os.ReadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec CatalogSpec
	if _, errs := strictyaml.Decode(data, &spec, strictyaml.Options{}); len(errs) > 0 {
		t.Fatalf("decoding sample catalog: %v", strictyaml.Join("testdata/catalog.yaml", errs))
	}
	return spec
}

// mustCatalog builds spec.
func mustCatalog(t *testing.T, spec CatalogSpec) *Catalog {
	t.Helper()
	c, err := NewCatalog(spec)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	return c
}

// configDigest returns the config digest of a single-manifest (or the first entry of a list) image.
func configDigest(t *testing.T, reg *Registry, ref string) string {
	t.Helper()
	r, err := name.ParseReference(reg.Host() + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("remote.Image %s: %v", ref, err)
	}
	d, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// contentRange formats a Content-Range header value.
func contentRange(first, last, size int) string {
	return fmt.Sprintf("bytes %d-%d/%d", first, last, size)
}
