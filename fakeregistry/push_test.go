package fakeregistry

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// pushAuth lets carol push to team/**, bob only pull team/**.
func pushAuth(mode AuthMode) Auth {
	a := testAuth(mode)
	a.Users["carol"] = User{Password: "carol-secret", Repositories: []string{"team/**"}, Push: []string{"team/**"}}
	return a
}

// multiArchIndex builds a random two-platform OCI index.
func multiArchIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 2)
		if err != nil {
			t.Fatal(err)
		}
		img = mutate.MediaType(img, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(emptyIndex(), types.OCIImageIndex), adds...)
}

// TestPushMultiArchIndexAndPullByDigest pushes an index with go-containerregistry under each auth
// mode, pulls it back by digest with go-containerregistry and inspects it with containers/image.
func TestPushMultiArchIndexAndPullByDigest(t *testing.T) {
	for _, mode := range []AuthMode{AuthNone, AuthBasic, AuthBearer} {
		t.Run(modeName(mode), func(t *testing.T) {
			reg := startRegistry(t, Options{TLS: true, Writable: true, Auth: pushAuth(mode)})
			idx := multiArchIndex(t)
			opts := []remote.Option{
				remote.WithContext(t.Context()),
				remote.WithTransport(httpClient(reg).Transport),
				remote.WithAuth(&authn.Basic{Username: "carol", Password: "carol-secret"}),
			}
			tag, err := name.NewTag(reg.Host() + "/team/pushed:v1")
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.WriteIndex(tag, idx, opts...); err != nil {
				t.Fatalf("WriteIndex: %v", err)
			}
			want, err := idx.Digest()
			if err != nil {
				t.Fatal(err)
			}
			byDigest := tag.Context().Digest(want.String())
			pulled, err := remote.Index(byDigest, opts...)
			if err != nil {
				t.Fatalf("pull by digest: %v", err)
			}
			got, err := pulled.Digest()
			if err != nil || got != want {
				t.Fatalf("pulled digest = %v (%v), want %s", got, err, want)
			}
			sys := podmanSystemContext(t, reg, "carol", "carol-secret")
			insp, err := inspectImage(t.Context(), sys, byDigest.String())
			if err != nil {
				t.Fatalf("containers/image inspect by digest: %v", err)
			}
			if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, insp.Entries); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPushDenied checks the write rules: read access alone does not allow a push.
func TestPushDenied(t *testing.T) {
	for _, mode := range []AuthMode{AuthBasic, AuthBearer} {
		t.Run(modeName(mode), func(t *testing.T) {
			reg := startRegistry(t, Options{TLS: true, Writable: true, Auth: pushAuth(mode)})
			img, err := random.Image(64, 1)
			if err != nil {
				t.Fatal(err)
			}
			tag, err := name.NewTag(reg.Host() + "/team/pushed:v1")
			if err != nil {
				t.Fatal(err)
			}
			err = remote.Write(tag, img, remote.WithContext(t.Context()),
				remote.WithTransport(httpClient(reg).Transport),
				remote.WithAuth(&authn.Basic{Username: "bob", Password: "bob-secret"}))
			if err == nil {
				t.Fatal("bob pushed without a push rule")
			}
			if n := reg.Counters().Snapshot().Responses[KindStatus{KindOther, http.StatusCreated}]; n != 0 {
				t.Errorf("%d writes succeeded, want none", n)
			}
		})
	}
}

// TestChunkedUploadOnTheWire uploads a blob in two chunks, checks Location headers and digest
// verification, then a manifest that references it.
func TestChunkedUploadOnTheWire(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true})
	blob := bytes.Repeat([]byte("0123456789"), 10)
	d := digestOf(blob)
	start := do(t, reg, http.MethodPost, "/v2/team/up/blobs/uploads/", nil, nil)
	loc := start.header.Get("Location")
	if start.status != http.StatusAccepted || loc == "" {
		t.Fatalf("POST = %d, Location %q; want 202 with a Location", start.status, loc)
	}
	for _, chunk := range [][2]int{{0, 40}, {40, 100}} {
		h := http.Header{"Content-Range": {strconv.Itoa(chunk[0]) + "-" + strconv.Itoa(chunk[1]-1)},
			"Content-Type": {"application/octet-stream"}}
		r := do(t, reg, http.MethodPatch, loc, h, bytes.NewReader(blob[chunk[0]:chunk[1]]))
		if r.status != http.StatusAccepted || r.header.Get("Location") == "" {
			t.Fatalf("PATCH %v = %d %s", chunk, r.status, r.body)
		}
		loc = r.header.Get("Location")
	}
	wrong := do(t, reg, http.MethodPut, loc+"?digest="+digestOf([]byte("other")).String(), nil, nil)
	if wrong.status != http.StatusBadRequest || errorCode(t, wrong) != codeDigestInvalid {
		t.Fatalf("PUT with a wrong digest = %d %s, want 400 %s", wrong.status, wrong.body, codeDigestInvalid)
	}
	if r := do(t, reg, http.MethodGet, "/v2/team/up/blobs/"+d.String(), nil, nil); r.status != http.StatusNotFound {
		t.Fatalf("blob after a failed upload: %d", r.status)
	}
	// A digest mismatch ends the session, as in go-containerregistry; upload again monolithically.
	put := do(t, reg, http.MethodPost, "/v2/team/up/blobs/uploads/?digest="+d.String(), nil, bytes.NewReader(blob))
	if put.status != http.StatusCreated || put.header.Get("Docker-Content-Digest") != d.String() {
		t.Fatalf("monolithic upload = %d %v %s", put.status, put.header, put.body)
	}
	wantBlobOnlyIn(t, reg, blob, "team/up", "team/other")
}

// TestManifestPutChecks checks what a manifest push must satisfy.
func TestManifestPutChecks(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true})
	known := do(t, reg, http.MethodGet, "/v2/team/app/api/manifests/v1", nil, nil)
	unknownDigest := digestOf([]byte("x")).String()
	tests := map[string]struct {
		path, contentType, body string
		wantStatus              int
		wantCode                string
	}{
		"copy by tag within the repository": {path: "/v2/team/app/api/manifests/v2", contentType: known.header.Get("Content-Type"), body: known.body, wantStatus: 201},
		"blobs not in the repository":       {path: "/v2/team/new/manifests/v1", contentType: known.header.Get("Content-Type"), body: known.body, wantStatus: 400, wantCode: codeManifestBlob},
		"digest mismatch":                   {path: "/v2/team/app/api/manifests/" + unknownDigest, contentType: known.header.Get("Content-Type"), body: known.body, wantStatus: 400, wantCode: codeDigestInvalid},
		"unknown media type":                {path: "/v2/team/app/api/manifests/v3", contentType: "text/plain", body: known.body, wantStatus: 400, wantCode: codeManifestInvalid},
		"invalid tag":                       {path: "/v2/team/app/api/manifests/-bad", contentType: known.header.Get("Content-Type"), body: known.body, wantStatus: 400, wantCode: codeTagInvalid},
	}
	for tcName, tc := range tests {
		t.Run(tcName, func(t *testing.T) {
			r := do(t, reg, http.MethodPut, tc.path, http.Header{"Content-Type": {tc.contentType}}, bytes.NewReader([]byte(tc.body)))
			if r.status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", r.status, tc.wantStatus, r.body)
			}
			if tc.wantCode != "" {
				if code := errorCode(t, r); code != tc.wantCode {
					t.Errorf("code = %s, want %s", code, tc.wantCode)
				}
				return
			}
			if loc := r.header.Get("Location"); loc != "/v2/team/app/api/manifests/"+known.header.Get("Docker-Content-Digest") {
				t.Errorf("Location = %q", loc)
			}
		})
	}
}

// TestCopyIndexWithinRegistry copies a catalog index with its attestations into another repository
// with go-containerregistry, as crane copy does (blobs are mounted across repositories), then
// inspects the copy with containers/image. (containers/image's copy package needs a module the
// proxy does not serve here, so the push side is go-containerregistry.)
func TestCopyIndexWithinRegistry(t *testing.T) {
	reg := startRegistry(t, Options{TLS: true, Writable: true, Auth: pushAuth(AuthBearer)})
	opts := []remote.Option{
		remote.WithContext(t.Context()),
		remote.WithTransport(httpClient(reg).Transport),
		remote.WithAuth(&authn.Basic{Username: "alice", Password: "alice-secret"}),
	}
	src, err := name.ParseReference(reg.Reference("library/multi", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(src, opts...)
	if err != nil {
		t.Fatalf("remote.Index: %v", err)
	}
	dst, err := name.ParseReference(reg.Reference("team/copy", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	opts[2] = remote.WithAuth(&authn.Basic{Username: "carol", Password: "carol-secret"})
	if err := remote.WriteIndex(dst, idx, opts...); err != nil {
		t.Fatalf("WriteIndex: %v", err)
	}
	im, err := reg.Catalog().Image("library/multi:latest")
	if err != nil {
		t.Fatal(err)
	}
	sys := podmanSystemContext(t, reg, "alice", "alice-secret")
	got, err := inspectImage(t.Context(), sys, reg.Reference("team/copy", im.Digest))
	if err != nil {
		t.Fatalf("inspect copy: %v", err)
	}
	if diff := cmp.Diff(expectedInspection(im), got); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
}

// emptyIndex is go-containerregistry's empty index.
func emptyIndex() v1.ImageIndex { return empty.Index }

// TestMountWithoutFrom mounts blobs without naming the repository they come from: a blob some
// repository the caller may pull has is mounted (201), any other gets an upload session (202).
func TestMountWithoutFrom(t *testing.T) {
	open := startRegistry(t, Options{})
	pullable := configDigest(t, open, "team/app/api:v1")
	hidden := configDigest(t, open, "legacy/tool:3.1")
	reg := startRegistry(t, Options{Writable: true, Auth: pushAuth(AuthBasic)})
	tests := map[string]struct {
		digest     string
		wantStatus int
	}{
		"in a repository carol may pull":   {digest: pullable, wantStatus: http.StatusCreated},
		"only in a repository she may not": {digest: hidden, wantStatus: http.StatusAccepted},
		"in no repository":                 {digest: digestOf([]byte("nowhere")).String(), wantStatus: http.StatusAccepted},
		"malformed digest":                 {digest: "sha256:nothex", wantStatus: http.StatusAccepted},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, reg.URL()+"/v2/team/new/blobs/uploads/?mount="+tc.digest, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth("carol", "carol-secret")
			resp, err := httpClient(reg).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("mount %s = %d, want %d", tc.digest, resp.StatusCode, tc.wantStatus)
			}
			want := "/v2/team/new/blobs/" + tc.digest
			if loc := resp.Header.Get("Location"); tc.wantStatus == http.StatusCreated && loc != want {
				t.Errorf("Location = %q, want %q", loc, want)
			}
		})
	}
}

// TestManifestTagParameters pushes a manifest by digest with the spec's tag parameters.
func TestManifestTagParameters(t *testing.T) {
	tests := map[string]struct {
		query      string
		wantStatus int
		wantOCITag string
		wantTags   []string
	}{
		"two tags":       {query: "?tag=v1&tag=latest", wantStatus: http.StatusCreated, wantOCITag: "v1, latest", wantTags: []string{"latest", "v1"}},
		"no tag":         {wantStatus: http.StatusCreated, wantTags: []string{}},
		"an invalid tag": {query: "?tag=v1&tag=-bad", wantStatus: http.StatusBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Writable: true, Catalog: mustCatalog(t, CatalogSpec{})})
			config := pushBlob(t, reg, "team/app", []byte("{}"))
			data, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: config, Layers: []v1.Descriptor{}})
			if err != nil {
				t.Fatal(err)
			}
			d := digestOf(data).String()
			r := do(t, reg, http.MethodPut, "/v2/team/app/manifests/"+d+tc.query,
				http.Header{"Content-Type": {string(types.OCIManifestSchema1)}}, bytes.NewReader(data))
			if r.status != tc.wantStatus || r.header.Get("OCI-Tag") != tc.wantOCITag {
				t.Fatalf("PUT %s = %d OCI-Tag %q (%s), want %d OCI-Tag %q", tc.query, r.status, r.header.Get("OCI-Tag"), r.body, tc.wantStatus, tc.wantOCITag)
			}
			if r.status != http.StatusCreated {
				if code := errorCode(t, r); code != codeTagInvalid {
					t.Errorf("code = %s, want %s", code, codeTagInvalid)
				}
				return
			}
			var list struct {
				Tags []string `json:"tags"`
			}
			if err := json.Unmarshal([]byte(do(t, reg, http.MethodGet, "/v2/team/app/tags/list", nil, nil).body), &list); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantTags, list.Tags); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}
