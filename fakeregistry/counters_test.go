package fakeregistry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCountersMatchClientRequests inspects an OCI index with bearer auth and checks every request
// containers/image sent, by kind, status and manifest reference.
func TestCountersMatchClientRequests(t *testing.T) {
	reg := startRegistry(t, Options{TLS: true, Auth: testAuth(AuthBearer)})
	sys := podmanSystemContext(t, reg, "alice", "alice-secret")
	if _, err := inspectImage(t.Context(), sys, reg.Reference("library/multi", "latest")); err != nil {
		t.Fatalf("inspect: %v", err)
	}
	im, err := reg.Catalog().Image("library/multi:latest")
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(len(im.Platforms))
	snap := reg.Counters().Snapshot()
	// ping (401), one token, the index, then each platform's manifest and config; attestations unread.
	wantResponses := map[KindStatus]uint64{
		{KindPing, 401}:        1,
		{KindToken, 200}:       1,
		{KindManifestGet, 200}: 1 + n,
		{KindBlobGet, 200}:     n,
	}
	if diff := cmp.Diff(wantResponses, snap.Responses); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
	if got, want := snap.Manifests[ManifestRef{Repository: "library/multi", Reference: "latest"}], (ManifestCount{Get: 1}); got != want {
		t.Errorf("manifest count for latest = %+v, want %+v", got, want)
	}
	if got, want := len(snap.Manifests), 1+int(n); got != want {
		t.Errorf("distinct manifest references = %d, want %d", got, want)
	}
	if got, want := snap.Total(), 3+2*n; got != want {
		t.Errorf("total = %d, want %d", got, want)
	}
	if diff := cmp.Diff(map[int]uint64{401: 1, 200: 2 + 2*n}, snap.Statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestCountersPrometheusAndReset(t *testing.T) {
	reg := startRegistry(t, Options{})
	client := httpClient(reg)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/v2/"},
		{http.MethodGet, "/v2/"},
		{http.MethodHead, "/v2/legacy/tool/manifests/3.1"},
		{http.MethodGet, "/v2/legacy/tool/manifests/nosuchtag"},
	} {
		r, err := http.NewRequestWithContext(t.Context(), req.method, reg.URL()+req.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", req.method, req.path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	promReg := prometheus.NewPedanticRegistry()
	if err := promReg.Register(reg.Counters()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	want := `
# HELP fakeregistry_manifest_requests_total Manifest requests by method, repository and reference.
# TYPE fakeregistry_manifest_requests_total counter
fakeregistry_manifest_requests_total{method="GET",reference="nosuchtag",repository="legacy/tool"} 1
fakeregistry_manifest_requests_total{method="HEAD",reference="3.1",repository="legacy/tool"} 1
# HELP fakeregistry_requests_total Registry requests by kind, counted on arrival.
# TYPE fakeregistry_requests_total counter
fakeregistry_requests_total{kind="manifest_get"} 1
fakeregistry_requests_total{kind="manifest_head"} 1
fakeregistry_requests_total{kind="ping"} 2
# HELP fakeregistry_responses_total Registry responses by request kind and status code (code "aborted": no response).
# TYPE fakeregistry_responses_total counter
fakeregistry_responses_total{code="200",kind="manifest_head"} 1
fakeregistry_responses_total{code="200",kind="ping"} 2
fakeregistry_responses_total{code="404",kind="manifest_get"} 1
`
	if err := testutil.GatherAndCompare(promReg, strings.NewReader(want),
		"fakeregistry_requests_total", "fakeregistry_responses_total", "fakeregistry_manifest_requests_total"); err != nil {
		t.Errorf("metrics: %v", err)
	}
	wantRepos := map[RepositoryKind]uint64{{"legacy/tool", KindManifestHead}: 1, {"legacy/tool", KindManifestGet}: 1}
	if diff := cmp.Diff(wantRepos, reg.Counters().Snapshot().Repositories); diff != "" {
		t.Errorf("requests by repository (-want +got):\n%s", diff)
	}
	// What another process reads from /metrics is the snapshot itself.
	rec := httptest.NewRecorder()
	reg.Counters().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parsed, err := ParseSnapshot(rec.Body)
	if err != nil {
		t.Fatalf("ParseSnapshot: %v", err)
	}
	if diff := cmp.Diff(reg.Counters().Snapshot(), parsed); diff != "" {
		t.Errorf("snapshot read from /metrics (-in-process +parsed):\n%s", diff)
	}
	reg.Counters().Reset()
	if diff := cmp.Diff(NewCounters().Snapshot(), reg.Counters().Snapshot()); diff != "" {
		t.Errorf("snapshot after Reset (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(reg.Counters()); n != 0 {
		t.Errorf("metrics after Reset = %d, want 0", n)
	}
}

func TestClassify(t *testing.T) {
	tests := map[string]struct {
		method, path string
		want         requestInfo
	}{
		"ping":                     {method: "GET", path: "/v2/", want: requestInfo{kind: KindPing, endpoint: endpointPing}},
		"ping no slash":            {method: "GET", path: "/v2", want: requestInfo{kind: KindPing, endpoint: endpointPing}},
		"token":                    {method: "GET", path: "/token", want: requestInfo{kind: KindToken, endpoint: endpointToken}},
		"manifest get":             {method: "GET", path: "/v2/a/b/c/manifests/v1", want: requestInfo{kind: KindManifestGet, repository: "a/b/c", reference: "v1", endpoint: endpointManifests}},
		"manifest head":            {method: "HEAD", path: "/v2/a/manifests/sha256:ab", want: requestInfo{kind: KindManifestHead, repository: "a", reference: "sha256:ab", endpoint: endpointManifests}},
		"manifest put":             {method: "PUT", path: "/v2/a/manifests/v1", want: requestInfo{kind: KindOther, repository: "a", reference: "v1", endpoint: endpointManifests, write: true}},
		"blob get":                 {method: "GET", path: "/v2/team/x/blobs/sha256:ab", want: requestInfo{kind: KindBlobGet, repository: "team/x", reference: "sha256:ab", endpoint: endpointBlobs}},
		"blob head":                {method: "HEAD", path: "/v2/x/blobs/sha256:ab", want: requestInfo{kind: KindBlobHead, repository: "x", reference: "sha256:ab", endpoint: endpointBlobs}},
		"manifest delete":          {method: "DELETE", path: "/v2/a/manifests/v1", want: requestInfo{kind: KindManifestDelete, repository: "a", reference: "v1", endpoint: endpointManifests, write: true}},
		"blob delete":              {method: "DELETE", path: "/v2/x/blobs/sha256:ab", want: requestInfo{kind: KindBlobDelete, repository: "x", reference: "sha256:ab", endpoint: endpointBlobs, write: true}},
		"upload cancel":            {method: "DELETE", path: "/v2/x/blobs/uploads/123", want: requestInfo{kind: KindOther, repository: "x", reference: "123", endpoint: endpointUploads, write: true}},
		"upload":                   {method: "POST", path: "/v2/team/x/blobs/uploads/", want: requestInfo{kind: KindOther, repository: "team/x", endpoint: endpointUploads, write: true}},
		"upload session":           {method: "PATCH", path: "/v2/team/x/blobs/uploads/123", want: requestInfo{kind: KindOther, repository: "team/x", reference: "123", endpoint: endpointUploads, write: true}},
		"upload status is a write": {method: "GET", path: "/v2/team/x/blobs/uploads/123", want: requestInfo{kind: KindOther, repository: "team/x", reference: "123", endpoint: endpointUploads, write: true}},
		"tags":                     {method: "GET", path: "/v2/team/x/tags/list", want: requestInfo{kind: KindOther, repository: "team/x", endpoint: endpointTags}},
		"referrers":                {method: "GET", path: "/v2/team/x/referrers/sha256:ab", want: requestInfo{kind: KindOther, repository: "team/x", reference: "sha256:ab", endpoint: endpointReferrers}},
		"repository named blobs":   {method: "GET", path: "/v2/a/blobs/tags/list", want: requestInfo{kind: KindOther, repository: "a/blobs", endpoint: endpointTags}},
		"catalog":                  {method: "GET", path: "/v2/_catalog", want: requestInfo{kind: KindOther, endpoint: endpointCatalog}},
		"unknown":                  {method: "GET", path: "/healthz", want: requestInfo{kind: KindOther}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := http.NewRequest(tc.method, "http://x"+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, classify(r), cmp.AllowUnexported(requestInfo{})); diff != "" {
				t.Errorf("classify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnapshotSub(t *testing.T) {
	ref := ManifestRef{Repository: "a", Reference: "v1"}
	base := Snapshot{Requests: map[RequestKind]uint64{KindPing: 2, KindManifestGet: 5},
		Manifests:    map[ManifestRef]ManifestCount{ref: {Get: 5}},
		Repositories: map[RepositoryKind]uint64{{"a", KindManifestGet}: 5}}
	for _, tc := range []struct {
		name       string
		now        Snapshot
		want       Snapshot
		wantRepos  uint64
		wantGetRef uint64
	}{
		{
			name: "growth since base",
			now: Snapshot{Requests: map[RequestKind]uint64{KindPing: 2, KindManifestGet: 8},
				Manifests:    map[ManifestRef]ManifestCount{ref: {Get: 8}},
				Repositories: map[RepositoryKind]uint64{{"a", KindManifestGet}: 8}},
			wantRepos: 3, wantGetRef: 3,
		},
		{
			name: "reset since base counts from zero",
			now: Snapshot{Requests: map[RequestKind]uint64{KindManifestGet: 1},
				Manifests:    map[ManifestRef]ManifestCount{ref: {Get: 1}},
				Repositories: map[RepositoryKind]uint64{{"a", KindManifestGet}: 1}},
			wantRepos: 1, wantGetRef: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.now.Sub(base)
			if got := d.Repositories[RepositoryKind{"a", KindManifestGet}]; got != tc.wantRepos {
				t.Errorf("repository requests = %d, want %d", got, tc.wantRepos)
			}
			if got := d.Manifests[ref].Get; got != tc.wantGetRef {
				t.Errorf("manifest GETs = %d, want %d", got, tc.wantGetRef)
			}
			if _, ok := d.Requests[KindPing]; ok {
				t.Errorf("pings = %d, want none (no growth)", d.Requests[KindPing])
			}
		})
	}
}
