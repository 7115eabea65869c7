package fakeregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// pushedImage is an image a test pushed over HTTP: a config and a layer, a manifest tagged v1 and
// v2, and a referrer manifest (by digest only) whose subject is the manifest.
type pushedImage struct {
	repo               string
	config, layer      v1.Hash
	manifest, referrer v1.Hash
}

// referrerArtifactType is the artifactType of pushImage's referrer.
const referrerArtifactType = "application/vnd.example.sbom"

// pushImage pushes a pushedImage into repo of a writable registry.
func pushImage(t *testing.T, reg *Registry, repo string) pushedImage {
	t.Helper()
	config := pushBlob(t, reg, repo, []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	layer := pushBlob(t, reg, repo, []byte("the layer of "+repo))
	empty := pushBlob(t, reg, repo, []byte("{}"))
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: config, Layers: []v1.Descriptor{layer}}
	manifest := pushManifest(t, reg, repo, m, "v1", "v2")
	empty.MediaType = "application/vnd.oci.empty.v1+json"
	referrer := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: referrerArtifactType,
		Config: empty, Layers: []v1.Descriptor{empty}, Subject: &manifest}
	return pushedImage{repo: repo, config: config.Digest, layer: layer.Digest, manifest: manifest.Digest,
		referrer: pushManifest(t, reg, repo, referrer).Digest}
}

// pushBlob uploads data monolithically into repo and returns its descriptor.
func pushBlob(t *testing.T, reg *Registry, repo string, data []byte) v1.Descriptor {
	t.Helper()
	d := digestOf(data)
	if r := do(t, reg, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d.String(), nil, bytes.NewReader(data)); r.status != http.StatusCreated {
		t.Fatalf("pushing blob %s to %s = %d %s", d, repo, r.status, r.body)
	}
	return v1.Descriptor{MediaType: types.OCILayer, Size: int64(len(data)), Digest: d}
}

// pushManifest puts m into repo under each tag, or by digest without tags, and returns its
// descriptor.
func pushManifest(t *testing.T, reg *Registry, repo string, m v1.Manifest, tags ...string) v1.Descriptor {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	desc := v1.Descriptor{MediaType: m.MediaType, Size: int64(len(data)), Digest: digestOf(data)}
	if len(tags) == 0 {
		tags = []string{desc.Digest.String()}
	}
	for _, ref := range tags {
		r := do(t, reg, http.MethodPut, "/v2/"+repo+"/manifests/"+ref, http.Header{"Content-Type": {string(m.MediaType)}}, bytes.NewReader(data))
		if r.status != http.StatusCreated {
			t.Fatalf("pushing manifest %s to %s = %d %s", ref, repo, r.status, r.body)
		}
	}
	return desc
}

// registryState is what a client sees of a pushedImage's repository.
type registryState struct {
	// Tags is the tag list.
	Tags []string
	// Manifests is the GET status of the manifest by digest and by each tag, and of the referrer.
	Manifests map[string]int
	// Blobs is the GET status of the config and the layer.
	Blobs map[string]int
	// Referrers are the artifact types the referrers API lists for the manifest.
	Referrers []string
}

// stateOf reads a registryState of im's repository.
func stateOf(t *testing.T, reg *Registry, im pushedImage) registryState {
	t.Helper()
	base := "/v2/" + im.repo
	s := registryState{Manifests: map[string]int{}, Blobs: map[string]int{}}
	var list struct {
		Tags []string `json:"tags"`
	}
	if r := do(t, reg, http.MethodGet, base+"/tags/list", nil, nil); r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &list) != nil {
		t.Fatalf("tag list = %d %s", r.status, r.body)
	}
	s.Tags = list.Tags
	for ref, path := range map[string]string{"digest": im.manifest.String(), "v1": "v1", "v2": "v2", "referrer": im.referrer.String()} {
		s.Manifests[ref] = do(t, reg, http.MethodGet, base+"/manifests/"+path, nil, nil).status
	}
	for blob, d := range map[string]v1.Hash{"config": im.config, "layer": im.layer} {
		s.Blobs[blob] = do(t, reg, http.MethodGet, base+"/blobs/"+d.String(), nil, nil).status
	}
	r := do(t, reg, http.MethodGet, base+"/referrers/"+im.manifest.String(), nil, nil)
	var idx v1.IndexManifest
	if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &idx) != nil {
		t.Fatalf("referrers = %d %s", r.status, r.body)
	}
	s.Referrers = []string{}
	for _, d := range idx.Manifests {
		s.Referrers = append(s.Referrers, d.ArtifactType)
	}
	return s
}

// pushedState is the registryState right after pushImage.
func pushedState() registryState {
	return registryState{
		Tags:      []string{"v1", "v2"},
		Manifests: map[string]int{"digest": 200, "v1": 200, "v2": 200, "referrer": 200},
		Blobs:     map[string]int{"config": 200, "layer": 200},
		Referrers: []string{referrerArtifactType},
	}
}

// TestDelete deletes manifests, tags and blobs of a pushed image and checks the answer and what a
// client sees afterwards: tag list, manifests by digest and tag, blobs and referrers.
func TestDelete(t *testing.T) {
	manifestPath := func(im pushedImage, ref string) string { return "/v2/" + im.repo + "/manifests/" + ref }
	blobPath := func(im pushedImage, d v1.Hash) string { return "/v2/" + im.repo + "/blobs/" + d.String() }
	tests := map[string]struct {
		// before are deletes done first, each answered 202.
		before     func(im pushedImage) []string
		path       func(im pushedImage) string
		wantStatus int
		wantCode   string
		// want changes the pushed state into the state expected afterwards.
		want func(s *registryState)
	}{
		"manifest by digest takes its tags": {
			path:       func(im pushedImage) string { return manifestPath(im, im.manifest.String()) },
			wantStatus: http.StatusAccepted,
			want: func(s *registryState) {
				s.Tags = []string{}
				s.Manifests["digest"], s.Manifests["v1"], s.Manifests["v2"] = 404, 404, 404
				// Referrers of a manifest that is gone are still listed (distribution-spec 1.1:
				// a subject need not exist), and the blobs stay until garbage collection.
			},
		},
		"tag leaves the manifest": {
			path:       func(im pushedImage) string { return manifestPath(im, "v1") },
			wantStatus: http.StatusAccepted,
			want: func(s *registryState) {
				s.Tags = []string{"v2"}
				s.Manifests["v1"] = 404
			},
		},
		"referrer leaves the referrers list": {
			path:       func(im pushedImage) string { return manifestPath(im, im.referrer.String()) },
			wantStatus: http.StatusAccepted,
			want: func(s *registryState) {
				s.Manifests["referrer"] = 404
				s.Referrers = []string{}
			},
		},
		"manifest deleted twice": {
			before:     func(im pushedImage) []string { return []string{manifestPath(im, im.manifest.String())} },
			path:       func(im pushedImage) string { return manifestPath(im, im.manifest.String()) },
			wantStatus: http.StatusNotFound, wantCode: codeManifestUnknown,
			want: func(s *registryState) {
				s.Tags = []string{}
				s.Manifests["digest"], s.Manifests["v1"], s.Manifests["v2"] = 404, 404, 404
			},
		},
		"unknown tag": {
			path:       func(im pushedImage) string { return manifestPath(im, "v3") },
			wantStatus: http.StatusNotFound, wantCode: codeManifestUnknown,
		},
		"manifest of an unknown repository": {
			path:       func(im pushedImage) string { return "/v2/team/nothing/manifests/" + im.manifest.String() },
			wantStatus: http.StatusNotFound, wantCode: codeNameUnknown,
		},
		"blob leaves the manifest": {
			path:       func(im pushedImage) string { return blobPath(im, im.layer) },
			wantStatus: http.StatusAccepted,
			want:       func(s *registryState) { s.Blobs["layer"] = 404 },
		},
		"blob deleted twice": {
			before:     func(im pushedImage) []string { return []string{blobPath(im, im.config)} },
			path:       func(im pushedImage) string { return blobPath(im, im.config) },
			wantStatus: http.StatusNotFound, wantCode: codeBlobUnknown,
			want: func(s *registryState) { s.Blobs["config"] = 404 },
		},
		"blob of another repository": {
			path:       func(im pushedImage) string { return "/v2/team/other/blobs/" + im.layer.String() },
			wantStatus: http.StatusNotFound, wantCode: codeBlobUnknown,
		},
		"malformed blob digest": {
			path:       func(im pushedImage) string { return "/v2/" + im.repo + "/blobs/sha256:nothex" },
			wantStatus: http.StatusBadRequest, wantCode: codeDigestInvalid,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Writable: true, Catalog: mustCatalog(t, CatalogSpec{})})
			im := pushImage(t, reg, "team/app")
			if tc.before != nil {
				for _, path := range tc.before(im) {
					if r := do(t, reg, http.MethodDelete, path, nil, nil); r.status != http.StatusAccepted {
						t.Fatalf("DELETE %s first = %d %s, want 202", path, r.status, r.body)
					}
				}
			}
			r := do(t, reg, http.MethodDelete, tc.path(im), nil, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("DELETE %s = %d %s, want %d", tc.path(im), r.status, r.body, tc.wantStatus)
			}
			if tc.wantCode != "" {
				if code := errorCode(t, r); code != tc.wantCode {
					t.Errorf("code = %s, want %s", code, tc.wantCode)
				}
			}
			want := pushedState()
			if tc.want != nil {
				tc.want(&want)
			}
			if diff := cmp.Diff(want, stateOf(t, reg, im)); diff != "" {
				t.Errorf("state after DELETE %s (-want +got):\n%s", tc.path(im), diff)
			}
		})
	}
}

// TestDeleteBlobKeepsOtherRepositories deletes a blob mounted into a second repository from the
// first: the second still serves it, and once deleted there too it is gone from both.
func TestDeleteBlobKeepsOtherRepositories(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true, Catalog: mustCatalog(t, CatalogSpec{})})
	im := pushImage(t, reg, "team/a")
	if r := do(t, reg, http.MethodPost, "/v2/team/b/blobs/uploads/?mount="+im.layer.String()+"&from=team/a", nil, nil); r.status != http.StatusCreated {
		t.Fatalf("mount = %d %s", r.status, r.body)
	}
	for _, repo := range []string{"team/a", "team/b"} {
		if r := do(t, reg, http.MethodDelete, "/v2/"+repo+"/blobs/"+im.layer.String(), nil, nil); r.status != http.StatusAccepted {
			t.Fatalf("DELETE in %s = %d %s", repo, r.status, r.body)
		}
		if repo == "team/a" {
			if r := do(t, reg, http.MethodGet, "/v2/team/b/blobs/"+im.layer.String(), nil, nil); r.status != http.StatusOK {
				t.Errorf("team/b after the delete in team/a = %d, want 200", r.status)
			}
		}
	}
	reg.store.mu.RLock()
	_, kept := reg.store.blobs[im.layer]
	reg.store.mu.RUnlock()
	if kept {
		t.Errorf("the store keeps the bytes of %s, which no repository serves", im.layer)
	}
}

// TestDeleteRefused checks registries that refuse deletions: read-only ones and writable ones
// with NoDelete answer 405 UNSUPPORTED and keep the content; upload cancelling still works.
func TestDeleteRefused(t *testing.T) {
	catalog := testCatalog(t)
	im, err := catalog.Image("team/app/api:v1")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts      Options
		wantAllow map[string]string
	}{
		"read-only": {opts: Options{Catalog: catalog}},
		"no delete": {
			opts:      Options{Catalog: catalog, Writable: true, NoDelete: true},
			wantAllow: map[string]string{"manifests": "GET, HEAD, PUT", "blobs": "GET, HEAD"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, tc.opts)
			paths := map[string]string{
				"manifests": "/v2/team/app/api/manifests/" + im.Digest,
				"blobs":     "/v2/team/app/api/blobs/" + configDigest(t, reg, "team/app/api:v1"),
			}
			for endpoint, path := range paths {
				r := do(t, reg, http.MethodDelete, path, nil, nil)
				if r.status != http.StatusMethodNotAllowed || errorCode(t, r) != codeUnsupported {
					t.Errorf("DELETE %s = %d %s, want 405 %s", path, r.status, r.body, codeUnsupported)
				}
				if allow := r.header.Get("Allow"); allow != tc.wantAllow[endpoint] {
					t.Errorf("DELETE %s Allow = %q, want %q", path, allow, tc.wantAllow[endpoint])
				}
				if r := do(t, reg, http.MethodGet, path, nil, nil); r.status != http.StatusOK {
					t.Errorf("GET %s after the refused delete = %d, want 200", path, r.status)
				}
			}
			if tc.opts.Writable {
				loc := startUpload(t, reg, "team/app/api")
				if r := do(t, reg, http.MethodDelete, loc, nil, nil); r.status != http.StatusNoContent {
					t.Errorf("cancelling an upload = %d %s, want 204", r.status, r.body)
				}
			}
		})
	}
}

// TestDeleteNeedsPush checks that deleting needs push rights: bob may pull team/** only, carol may
// push there.
func TestDeleteNeedsPush(t *testing.T) {
	tests := map[string]struct {
		mode       AuthMode
		user, pass string
		wantStatus int
	}{
		"basic pull only":  {mode: AuthBasic, user: "bob", pass: "bob-secret", wantStatus: http.StatusForbidden},
		"basic push":       {mode: AuthBasic, user: "carol", pass: "carol-secret", wantStatus: http.StatusAccepted},
		"bearer pull only": {mode: AuthBearer, user: "bob", pass: "bob-secret", wantStatus: http.StatusUnauthorized},
		"bearer push":      {mode: AuthBearer, user: "carol", pass: "carol-secret", wantStatus: http.StatusAccepted},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Writable: true, Auth: pushAuth(tc.mode)})
			client := httpClient(reg)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, reg.URL()+"/v2/team/app/api/manifests/v1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.mode == AuthBearer {
				req.Header.Set("Authorization", "Bearer "+fetchScopedToken(t, reg, client, tc.user, tc.pass, "repository:team/app/api:pull,push"))
			} else {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("DELETE as %s = %d, want %d", tc.user, resp.StatusCode, tc.wantStatus)
			}
		})
	}
}

// TestDeleteImage deletes images through the library API, whatever the options say.
func TestDeleteImage(t *testing.T) {
	catalog := testCatalog(t)
	multi, err := catalog.Image("library/multi:latest")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts      Options
		reference string
		wantErr   error
		// want404 and want200 are manifest paths under /v2/library/multi/manifests/.
		want404, want200 []string
	}{
		"by tag on a read-only registry": {
			opts: Options{Catalog: catalog}, reference: "latest",
			want404: []string{"latest", "1.0", multi.Digest},
		},
		"by digest with deletion disabled": {
			opts: Options{Catalog: catalog, Writable: true, NoDelete: true}, reference: multi.Digest,
			want404: []string{"latest", "1.0", multi.Digest},
		},
		"unknown tag": {
			opts: Options{Catalog: catalog}, reference: "nope", wantErr: ErrManifestUnknown,
			want200: []string{"latest", multi.Digest},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, tc.opts)
			child := platformManifest(t, reg, "library/multi:latest", "linux", "arm64").Digest.String()
			err := reg.DeleteImage("library/multi", tc.reference)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("DeleteImage = %v, want %v", err, tc.wantErr)
			}
			// The manifests an index lists stay, as in a registry before garbage collection.
			for status, refs := range map[int][]string{404: tc.want404, 200: append(slices.Clone(tc.want200), child)} {
				for _, ref := range refs {
					if r := do(t, reg, http.MethodGet, "/v2/library/multi/manifests/"+ref, nil, nil); r.status != status {
						t.Errorf("GET %s = %d, want %d", ref, r.status, status)
					}
				}
			}
			if got := reg.Counters().Snapshot().Requests[KindManifestDelete]; got != 0 {
				t.Errorf("manifest_delete requests = %d, want 0: DeleteImage sends no request", got)
			}
		})
	}
}

// TestDeleteCounted checks that deletions are counted under their own kinds.
func TestDeleteCounted(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true, Catalog: mustCatalog(t, CatalogSpec{})})
	im := pushImage(t, reg, "team/app")
	reg.Counters().Reset()
	for _, path := range []string{"/v2/team/app/manifests/v1", "/v2/team/app/manifests/v1", "/v2/team/app/blobs/" + im.layer.String()} {
		do(t, reg, http.MethodDelete, path, nil, nil)
	}
	want := map[KindStatus]uint64{
		{Kind: KindManifestDelete, Status: http.StatusAccepted}: 1,
		{Kind: KindManifestDelete, Status: http.StatusNotFound}: 1,
		{Kind: KindBlobDelete, Status: http.StatusAccepted}:     1,
	}
	if diff := cmp.Diff(want, reg.Counters().Snapshot().Responses); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
}
