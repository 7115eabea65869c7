package fakeregistry

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// startUpload opens an upload session in repo and returns its Location.
func startUpload(t *testing.T, reg *Registry, repo string) string {
	t.Helper()
	r := do(t, reg, http.MethodPost, "/v2/"+repo+"/blobs/uploads/", nil, nil)
	loc := r.header.Get("Location")
	if r.status != http.StatusAccepted || !strings.HasPrefix(loc, "/v2/"+repo+"/blobs/uploads/") {
		t.Fatalf("POST in %s = %d, Location %q; want 202 with a Location in the repository", repo, r.status, loc)
	}
	return loc
}

// TestUploadSessionBelongsToItsRepository starts an upload in team/a and tries to read, continue,
// commit and cancel it through team/b's URL: every attempt is 404 BLOB_UPLOAD_UNKNOWN, and the
// session still completes in team/a afterwards.
func TestUploadSessionBelongsToItsRepository(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true})
	blob := []byte("tied to team/a")
	d := digestOf(blob)
	loc := startUpload(t, reg, "team/a")
	if r := do(t, reg, http.MethodPatch, loc, nil, bytes.NewReader(blob[:5])); r.status != http.StatusAccepted {
		t.Fatalf("PATCH in team/a = %d %s", r.status, r.body)
	}
	foreign := strings.Replace(loc, "/team/a/", "/team/b/", 1)
	tests := map[string]struct {
		method string
		path   string
		body   []byte
	}{
		"status":   {method: http.MethodGet, path: foreign},
		"continue": {method: http.MethodPatch, path: foreign, body: blob[5:]},
		"commit":   {method: http.MethodPut, path: foreign + "?digest=" + d.String(), body: blob[5:]},
		"cancel":   {method: http.MethodDelete, path: foreign},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := do(t, reg, tc.method, tc.path, nil, bytes.NewReader(tc.body))
			if r.status != http.StatusNotFound || errorCode(t, r) != codeBlobUploadUnknown {
				t.Errorf("%s through team/b = %d %s, want 404 %s", tc.method, r.status, r.body, codeBlobUploadUnknown)
			}
		})
	}
	commit := do(t, reg, http.MethodPut, loc+"?digest="+d.String(), nil, bytes.NewReader(blob[5:]))
	if commit.status != http.StatusCreated {
		t.Fatalf("commit in team/a = %d %s, want 201", commit.status, commit.body)
	}
	wantBlobOnlyIn(t, reg, blob, "team/a", "team/b")
}

// wantBlobOnlyIn checks that blob is served from repo and not from other.
func wantBlobOnlyIn(t *testing.T, reg *Registry, blob []byte, repo, other string) {
	t.Helper()
	d := digestOf(blob).String()
	if r := do(t, reg, http.MethodGet, "/v2/"+repo+"/blobs/"+d, nil, nil); r.status != http.StatusOK || r.body != string(blob) {
		t.Errorf("blob in %s = %d %q, want 200 with the blob", repo, r.status, r.body)
	}
	if r := do(t, reg, http.MethodGet, "/v2/"+other+"/blobs/"+d, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("blob in %s = %d, want 404", other, r.status)
	}
}

// TestUploadStatusAndCancel follows one session: status while empty and after a chunk, an
// out-of-order chunk, cancel, and reuse after cancel.
func TestUploadStatusAndCancel(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true})
	loc := startUpload(t, reg, "team/up")
	wantProgress := func(step string, r rawResponse, status int, rng string) {
		t.Helper()
		if r.status != status || r.header.Get("Range") != rng || r.header.Get("Location") != loc {
			t.Errorf("%s = %d Range %q Location %q, want %d Range %q Location %q (body %s)",
				step, r.status, r.header.Get("Range"), r.header.Get("Location"), status, rng, loc, r.body)
		}
	}
	wantProgress("status of an empty upload", do(t, reg, http.MethodGet, loc, nil, nil), http.StatusNoContent, "0-0")
	wantProgress("PATCH 10 bytes", do(t, reg, http.MethodPatch, loc, http.Header{"Content-Range": {"0-9"}},
		strings.NewReader("0123456789")), http.StatusAccepted, "0-9")
	wantProgress("status after 10 bytes", do(t, reg, http.MethodGet, loc, nil, nil), http.StatusNoContent, "0-9")
	gap := do(t, reg, http.MethodPatch, loc, http.Header{"Content-Range": {"20-29"}}, strings.NewReader("0123456789"))
	wantProgress("PATCH past the end", gap, http.StatusRequestedRangeNotSatisfiable, "0-9")
	if code := errorCode(t, gap); code != codeBlobUploadInvalid {
		t.Errorf("PATCH past the end code = %s, want %s", code, codeBlobUploadInvalid)
	}
	if r := do(t, reg, http.MethodDelete, loc, nil, nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s, want 204", r.status, r.body)
	}
	for _, method := range []string{http.MethodGet, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		r := do(t, reg, method, loc+"?digest="+digestOf(nil).String(), nil, nil)
		if r.status != http.StatusNotFound || errorCode(t, r) != codeBlobUploadUnknown {
			t.Errorf("%s after cancel = %d %s, want 404 %s", method, r.status, r.body, codeBlobUploadUnknown)
		}
	}
}

// TestUploadRequestShapes checks requests the protocol does not allow. Each case that names an
// upload (the path uploadLoc) gets one of its own: a refused request may end the session, and
// the cases run in any order.
func TestUploadRequestShapes(t *testing.T) {
	const uploadLoc = "<upload>"
	reg := startRegistry(t, Options{Writable: true})
	loc := uploadLoc
	tests := map[string]struct {
		method, path string
		header       http.Header
		wantStatus   int
		wantCode     string
	}{
		"POST with an id":       {method: http.MethodPost, path: loc, wantStatus: 404, wantCode: codeBlobUploadUnknown},
		"PATCH without an id":   {method: http.MethodPatch, path: "/v2/team/up/blobs/uploads/", wantStatus: 404, wantCode: codeBlobUploadUnknown},
		"unknown id":            {method: http.MethodGet, path: "/v2/team/up/blobs/uploads/nope", wantStatus: 404, wantCode: codeBlobUploadUnknown},
		"bad Content-Range":     {method: http.MethodPatch, path: loc, header: http.Header{"Content-Range": {"bytes=0-1"}}, wantStatus: 416, wantCode: codeBlobUploadInvalid},
		"PUT without a digest":  {method: http.MethodPut, path: loc, wantStatus: 400, wantCode: codeDigestInvalid},
		"monolithic bad digest": {method: http.MethodPost, path: "/v2/team/up/blobs/uploads/?digest=sha256:nothex", wantStatus: 400, wantCode: codeDigestInvalid},
		"HEAD":                  {method: http.MethodHead, path: loc, wantStatus: 405},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.path == uploadLoc {
				tc.path = startUpload(t, reg, "team/up")
			}
			r := do(t, reg, tc.method, tc.path, tc.header, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.wantStatus)
			}
			if tc.wantCode != "" && errorCode(t, r) != tc.wantCode {
				t.Errorf("code = %s, want %s", errorCode(t, r), tc.wantCode)
			}
		})
	}
}

// redirectUploads is a transport that sends upload chunks and commits to another repository's URL,
// as a confused or hostile client might.
type redirectUploads struct {
	base     http.RoundTripper
	from, to string
}

// RoundTrip rewrites the repository of PATCH and PUT upload requests.
func (rt redirectUploads) RoundTrip(r *http.Request) (*http.Response, error) {
	if (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.Contains(r.URL.Path, "/blobs/uploads/") {
		r = r.Clone(r.Context())
		r.URL.Path = strings.Replace(r.URL.Path, "/v2/"+rt.from+"/", "/v2/"+rt.to+"/", 1)
	}
	return rt.base.RoundTrip(r)
}

// TestGGCRUploadsStayInTheirRepository writes a layer with go-containerregistry: directly it lands
// and reads back; when its session is continued through another repository it fails with
// BLOB_UPLOAD_UNKNOWN.
func TestGGCRUploadsStayInTheirRepository(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true})
	layer, err := random.Layer(1024, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(reg.Host()+"/team/a", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteLayer(repo, layer, remote.WithContext(t.Context())); err != nil {
		t.Fatalf("WriteLayer: %v", err)
	}
	d, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Layer(repo.Digest(d.String()), remote.WithContext(t.Context())); err != nil {
		t.Errorf("reading the layer back: %v", err)
	}
	other, err := random.Layer(1024, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	rt := redirectUploads{base: http.DefaultTransport, from: "team/a", to: "team/b"}
	err = remote.WriteLayer(repo, other, remote.WithContext(t.Context()), remote.WithTransport(rt))
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound || len(terr.Errors) == 0 ||
		terr.Errors[0].Code != transport.ErrorCode(codeBlobUploadUnknown) {
		t.Errorf("WriteLayer continued through team/b: %v, want 404 %s", err, codeBlobUploadUnknown)
	}
}

// TestCommitWithFinalChunk closes sessions holding 4 bytes with a PUT that carries the last 6 bytes
// under various Content-Ranges: in order it commits; out of order it is 416 BLOB_UPLOAD_INVALID with
// the current Range, and the session stays open so the client resumes from there.
func TestCommitWithFinalChunk(t *testing.T) {
	blob := []byte("0123456789")
	d := digestOf(blob)
	tests := map[string]struct {
		contentRange string
		wantStatus   int
	}{
		"in order":          {contentRange: "4-9", wantStatus: http.StatusCreated},
		"without a range":   {wantStatus: http.StatusCreated},
		"past the end":      {contentRange: "6-9", wantStatus: http.StatusRequestedRangeNotSatisfiable},
		"overlapping":       {contentRange: "2-7", wantStatus: http.StatusRequestedRangeNotSatisfiable},
		"from the start":    {contentRange: "0-5", wantStatus: http.StatusRequestedRangeNotSatisfiable},
		"malformed":         {contentRange: "bytes 4-9/10", wantStatus: http.StatusRequestedRangeNotSatisfiable},
		"end before start":  {contentRange: "9-4", wantStatus: http.StatusRequestedRangeNotSatisfiable},
		"negative position": {contentRange: "-4-9", wantStatus: http.StatusRequestedRangeNotSatisfiable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Writable: true})
			loc := startUpload(t, reg, "team/up")
			if r := do(t, reg, http.MethodPatch, loc, http.Header{"Content-Range": {"0-3"}}, bytes.NewReader(blob[:4])); r.status != http.StatusAccepted {
				t.Fatalf("PATCH 0-3 = %d %s", r.status, r.body)
			}
			var h http.Header
			if tc.contentRange != "" {
				h = http.Header{"Content-Range": {tc.contentRange}}
			}
			put := do(t, reg, http.MethodPut, loc+"?digest="+d.String(), h, bytes.NewReader(blob[4:]))
			if put.status != tc.wantStatus {
				t.Fatalf("PUT Content-Range %q = %d %s, want %d", tc.contentRange, put.status, put.body, tc.wantStatus)
			}
			if put.status == http.StatusRequestedRangeNotSatisfiable {
				if code := errorCode(t, put); code != codeBlobUploadInvalid {
					t.Errorf("code = %s, want %s", code, codeBlobUploadInvalid)
				}
				status := do(t, reg, http.MethodGet, loc, nil, nil)
				if status.status != http.StatusNoContent || status.header.Get("Range") != "0-3" {
					t.Fatalf("session after the refused PUT = %d Range %q, want 204 Range 0-3 (%s)", status.status, status.header.Get("Range"), status.body)
				}
				if put.header.Get("Range") != "0-3" || put.header.Get("Location") != loc {
					t.Errorf("416 Range %q Location %q, want 0-3 and %s", put.header.Get("Range"), put.header.Get("Location"), loc)
				}
				put = do(t, reg, http.MethodPut, loc+"?digest="+d.String(), http.Header{"Content-Range": {"4-9"}}, bytes.NewReader(blob[4:]))
				if put.status != http.StatusCreated {
					t.Fatalf("PUT 4-9 after the 416 = %d %s, want 201", put.status, put.body)
				}
			}
			wantBlobOnlyIn(t, reg, blob, "team/up", "team/other")
		})
	}
}
