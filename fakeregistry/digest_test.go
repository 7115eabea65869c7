package fakeregistry

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// sha512Of returns the sha512 digest of data.
func sha512Of(data []byte) v1.Hash {
	return digestWith("sha512", data)
}

// errorMessage returns the first message of a JSON error body.
func errorMessage(t *testing.T, r rawResponse) string {
	t.Helper()
	var body struct {
		Errors []registryError `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || len(body.Errors) == 0 {
		t.Fatalf("error body %q is not a distribution-spec error (%v)", r.body, err)
	}
	return body.Errors[0].Message
}

// TestSHA512BlobUploads uploads one blob by its sha512 digest in each way the protocol allows and
// reads it back under that digest.
func TestSHA512BlobUploads(t *testing.T) {
	blob := bytes.Repeat([]byte("sha512 "), 20)
	d := sha512Of(blob).String()
	tests := map[string]func(t *testing.T, reg *Registry) rawResponse{
		"single POST": func(t *testing.T, reg *Registry) rawResponse {
			return do(t, reg, http.MethodPost, "/v2/team/up/blobs/uploads/?digest="+d, nil, bytes.NewReader(blob))
		},
		"single POST with digest-algorithm": func(t *testing.T, reg *Registry) rawResponse {
			return do(t, reg, http.MethodPost, "/v2/team/up/blobs/uploads/?digest-algorithm=sha512&digest="+d, nil, bytes.NewReader(blob))
		},
		"POST then PUT": func(t *testing.T, reg *Registry) rawResponse {
			loc := startUpload(t, reg, "team/up")
			return do(t, reg, http.MethodPut, loc+"?digest="+d, nil, bytes.NewReader(blob))
		},
		"chunks with digest-algorithm": func(t *testing.T, reg *Registry) rawResponse {
			start := do(t, reg, http.MethodPost, "/v2/team/up/blobs/uploads/?digest-algorithm=sha512", nil, nil)
			if start.status != http.StatusAccepted {
				t.Fatalf("POST ?digest-algorithm=sha512 = %d %s", start.status, start.body)
			}
			loc := start.header.Get("Location")
			if r := do(t, reg, http.MethodPatch, loc, http.Header{"Content-Range": {"0-49"}}, bytes.NewReader(blob[:50])); r.status != http.StatusAccepted {
				t.Fatalf("PATCH = %d %s", r.status, r.body)
			}
			return do(t, reg, http.MethodPut, loc+"?digest="+d, nil, bytes.NewReader(blob[50:]))
		},
	}
	for name, upload := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Writable: true})
			r := upload(t, reg)
			if r.status != http.StatusCreated || r.header.Get("Docker-Content-Digest") != d || r.header.Get("Location") != "/v2/team/up/blobs/"+d {
				t.Fatalf("upload = %d Docker-Content-Digest %q Location %q (%s), want 201 with the sha512 digest",
					r.status, r.header.Get("Docker-Content-Digest"), r.header.Get("Location"), r.body)
			}
			for _, method := range []string{http.MethodHead, http.MethodGet} {
				got := do(t, reg, method, "/v2/team/up/blobs/"+d, nil, nil)
				if got.status != http.StatusOK || got.header.Get("Docker-Content-Digest") != d {
					t.Errorf("%s = %d Docker-Content-Digest %q, want 200 %s", method, got.status, got.header.Get("Docker-Content-Digest"), d)
				}
				if method == http.MethodGet && got.body != string(blob) {
					t.Errorf("GET body = %q, want the blob", got.body)
				}
			}
			if got := do(t, reg, http.MethodGet, "/v2/team/up/blobs/"+digestOf(blob).String(), nil, nil); got.status != http.StatusNotFound {
				t.Errorf("the blob by its sha256 digest = %d, want 404: it was pushed by sha512 only", got.status)
			}
		})
	}
}

// TestDigestErrors checks digests the registry refuses and that its messages name the algorithm it
// compared.
func TestDigestErrors(t *testing.T) {
	blob := []byte("content")
	other := []byte("other content")
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"` +
		digestOf([]byte("{}")).String() + `","size":2},"layers":[]}`)
	sha384 := "sha384:" + strings.Repeat("ab", 48)
	tests := map[string]struct {
		method, path string
		body         []byte
		// sha512Session starts the upload with ?digest-algorithm=sha512 and sends the request to it.
		sha512Session bool
		wantStatus    int
		wantCode      string
		wantMessage   []string
	}{
		"sha512 of other content": {
			method: http.MethodPost, path: "/v2/team/up/blobs/uploads/?digest=" + sha512Of(other).String(), body: blob,
			wantStatus: 400, wantCode: codeDigestInvalid,
			wantMessage: []string{"the sha512 digest of the content is " + sha512Of(blob).String() + ", not " + sha512Of(other).String()},
		},
		"sha256 of other content": {
			method: http.MethodPost, path: "/v2/team/up/blobs/uploads/?digest=" + digestOf(other).String(), body: blob,
			wantStatus: 400, wantCode: codeDigestInvalid,
			wantMessage: []string{"the sha256 digest of the content is " + digestOf(blob).String() + ", not " + digestOf(other).String()},
		},
		"sha256 digest after digest-algorithm=sha512": {
			method: http.MethodPut, path: "?digest=" + digestOf(blob).String(), body: blob, sha512Session: true,
			wantStatus: 400, wantCode: codeDigestInvalid,
			wantMessage: []string{"digest-algorithm=sha512", digestOf(blob).String() + " is a sha256 digest"},
		},
		"unsupported digest-algorithm": {
			method: http.MethodPost, path: "/v2/team/up/blobs/uploads/?digest-algorithm=sha384",
			wantStatus: 400, wantCode: codeDigestInvalid, wantMessage: []string{`unsupported digest algorithm "sha384"`, "sha256 or sha512"},
		},
		"unsupported blob digest": {
			method: http.MethodPost, path: "/v2/team/up/blobs/uploads/?digest=" + sha384, body: blob,
			wantStatus: 400, wantCode: codeDigestInvalid, wantMessage: []string{`unsupported digest algorithm "sha384"`},
		},
		"sha512 digest too short": {
			method: http.MethodGet, path: "/v2/team/up/blobs/sha512:" + strings.Repeat("ab", 32),
			wantStatus: 400, wantCode: codeDigestInvalid, wantMessage: []string{"invalid digest"},
		},
		"manifest under another sha512": {
			method: http.MethodPut, path: "/v2/team/up/manifests/" + sha512Of(other).String(), body: manifest,
			wantStatus: 400, wantCode: codeDigestInvalid,
			wantMessage: []string{"manifest: the sha512 digest of the content is " + sha512Of(manifest).String()},
		},
		"manifest under an unsupported digest": {
			method: http.MethodPut, path: "/v2/team/up/manifests/" + sha384, body: manifest,
			wantStatus: 400, wantCode: codeDigestInvalid, wantMessage: []string{`unsupported digest algorithm "sha384"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Writable: true})
			pushBlob(t, reg, "team/up", []byte("{}"))
			path := tc.path
			if tc.sha512Session {
				start := do(t, reg, http.MethodPost, "/v2/team/up/blobs/uploads/?digest-algorithm=sha512", nil, nil)
				path = start.header.Get("Location") + path
			}
			h := http.Header{"Content-Type": {string(types.OCIManifestSchema1)}}
			r := do(t, reg, tc.method, path, h, bytes.NewReader(tc.body))
			if r.status != tc.wantStatus {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, path, r.status, r.body, tc.wantStatus)
			}
			if code := errorCode(t, r); code != tc.wantCode {
				t.Errorf("code = %s, want %s", code, tc.wantCode)
			}
			msg := errorMessage(t, r)
			for _, want := range tc.wantMessage {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
		})
	}
}

// TestSHA512Manifests pushes an image whose blobs and manifests are all named by sha512 digests,
// with a referrer, and reads, lists and deletes them by those digests.
func TestSHA512Manifests(t *testing.T) {
	reg := startRegistry(t, Options{Writable: true})
	const repo = "team/sha512"
	push := func(data []byte) v1.Descriptor {
		d := sha512Of(data)
		if r := do(t, reg, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d.String(), nil, bytes.NewReader(data)); r.status != http.StatusCreated {
			t.Fatalf("blob %s = %d %s", d, r.status, r.body)
		}
		return v1.Descriptor{MediaType: types.OCILayer, Size: int64(len(data)), Digest: d}
	}
	put := func(m any, mediaType types.MediaType) v1.Descriptor {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		d := sha512Of(data)
		r := do(t, reg, http.MethodPut, "/v2/"+repo+"/manifests/"+d.String(), http.Header{"Content-Type": {string(mediaType)}}, bytes.NewReader(data))
		if r.status != http.StatusCreated || r.header.Get("Docker-Content-Digest") != d.String() || r.header.Get("Location") != "/v2/"+repo+"/manifests/"+d.String() {
			t.Fatalf("manifest PUT = %d Docker-Content-Digest %q Location %q (%s), want 201 under %s",
				r.status, r.header.Get("Docker-Content-Digest"), r.header.Get("Location"), r.body, d)
		}
		return v1.Descriptor{MediaType: mediaType, Size: int64(len(data)), Digest: d}
	}
	config := push([]byte(`{"architecture":"arm64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	config.MediaType = types.OCIConfigJSON
	img := put(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: config, Layers: []v1.Descriptor{push([]byte("layer"))}}, types.OCIManifestSchema1)
	img.Platform = &v1.Platform{OS: "linux", Architecture: "arm64"}
	idx := put(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{img}}, types.OCIImageIndex)
	empty := push([]byte("{}"))
	empty.MediaType = "application/vnd.oci.empty.v1+json"
	subject := idx
	put(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: referrerArtifactType, Config: empty,
		Layers: []v1.Descriptor{empty}, Subject: &subject}, types.OCIManifestSchema1)

	for _, d := range []v1.Descriptor{idx, img} {
		for _, method := range []string{http.MethodHead, http.MethodGet} {
			r := do(t, reg, method, "/v2/"+repo+"/manifests/"+d.Digest.String(), nil, nil)
			if r.status != http.StatusOK || r.header.Get("Docker-Content-Digest") != d.Digest.String() || r.header.Get("Content-Type") != string(d.MediaType) {
				t.Errorf("%s %s = %d Docker-Content-Digest %q Content-Type %q, want 200 with that digest and %s",
					method, d.Digest, r.status, r.header.Get("Docker-Content-Digest"), r.header.Get("Content-Type"), d.MediaType)
			}
			if method == http.MethodGet && sha512Of([]byte(r.body)) != d.Digest {
				t.Errorf("GET %s body has another sha512 digest", d.Digest)
			}
		}
	}
	refs := do(t, reg, http.MethodGet, "/v2/"+repo+"/referrers/"+idx.Digest.String(), nil, nil)
	if refs.status != http.StatusOK || !strings.Contains(refs.body, `"artifactType":"`+referrerArtifactType+`"`) {
		t.Errorf("referrers of the sha512 index = %d %s, want the referrer", refs.status, refs.body)
	}
	if r := do(t, reg, http.MethodDelete, "/v2/"+repo+"/manifests/"+idx.Digest.String(), nil, nil); r.status != http.StatusAccepted {
		t.Fatalf("DELETE by sha512 digest = %d %s", r.status, r.body)
	}
	if r := do(t, reg, http.MethodGet, "/v2/"+repo+"/manifests/"+idx.Digest.String(), nil, nil); r.status != http.StatusNotFound {
		t.Errorf("GET after DELETE = %d, want 404", r.status)
	}
}

// TestReferrersTagOf checks the tag-schema fallback tags of the spec's examples: algorithms and
// encoded parts are truncated to 32 and 64 characters.
func TestReferrersTagOf(t *testing.T) {
	tests := map[string]struct {
		subject v1.Hash
		want    string
	}{
		"sha256": {subject: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}, want: "sha256-" + strings.Repeat("a", 64)},
		"sha512": {subject: v1.Hash{Algorithm: "sha512", Hex: strings.Repeat("a", 128)}, want: "sha512-" + strings.Repeat("a", 64)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := referrersTagOf(tc.subject); got != tc.want {
				t.Errorf("referrersTagOf = %q, want %q", got, tc.want)
			}
		})
	}
}
