package fakeregistry

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// maxManifestSize is the largest manifest a push may send; the distribution spec asks registries to
// accept at least 4 MiB.
const maxManifestSize = 4 << 20

// api serves the distribution API from a store: manifests with content negotiation, repository-scoped
// blobs with RFC 9110 ranges, ordered and paginated tags and catalog, referrers, and (when writable)
// pushes with upload sessions tied to their repository.
type api struct {
	store       *store
	sessions    *uploadSessions
	negotiation Negotiation
	writable    bool
	// deletable is set when clients may delete manifests, tags and blobs (Options.Writable without
	// Options.NoDelete).
	deletable bool
}

// newAPI returns the API over s, writable and deletable as opts say.
func newAPI(s *store, negotiation Negotiation, opts Options) *api {
	return &api{store: s, sessions: newUploadSessions(), negotiation: negotiation,
		writable: opts.Writable, deletable: opts.Writable && !opts.NoDelete}
}

// ServeHTTP routes by endpoint.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if info.repository != "" && !repoNameRE.MatchString(info.repository) {
		writeRegistryError(w, http.StatusBadRequest, codeNameInvalid, fmt.Sprintf("invalid repository name %q", info.repository))
		return
	}
	if info.write && !a.writable {
		writeRegistryError(w, http.StatusMethodNotAllowed, codeUnsupported, "fakeregistry is read-only (start it writable to push)")
		return
	}
	if info.deletes() && !a.deletable {
		// RFC 9110 §15.5.6: a 405 names the methods the resource allows.
		allowed := []string{http.MethodGet, http.MethodHead}
		if info.endpoint == endpointManifests {
			allowed = append(allowed, http.MethodPut)
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeRegistryError(w, http.StatusMethodNotAllowed, codeUnsupported, "deletion is disabled on this fakeregistry")
		return
	}
	switch info.endpoint {
	case endpointPing:
		writeJSON(w, "application/json", struct{}{})
	case endpointCatalog:
		a.serveCatalog(w, r)
	case endpointTags:
		a.serveTags(w, r, info)
	case endpointManifests:
		a.serveManifest(w, r, info)
	case endpointBlobs:
		a.serveBlob(w, r, info)
	case endpointUploads:
		a.serveUpload(w, r, info)
	case endpointReferrers:
		a.serveReferrers(w, r, info)
	default:
		writeRegistryError(w, http.StatusNotFound, codeMethodUnknown, "unknown registry endpoint "+r.URL.Path)
	}
}

// allowMethods answers 405 unless r uses one of methods; it reports whether r may go on.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeRegistryError(w, http.StatusMethodNotAllowed, codeUnsupported, r.Method+" is not supported here")
	return false
}

// serveCatalog lists the repositories the caller may pull, in lexical order, paginated.
func (a *api) serveCatalog(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodGet) {
		return
	}
	mayPull := callerFrom(r.Context())
	var repos []string
	for _, name := range a.store.repositories() {
		if mayPull(name) {
			repos = append(repos, name)
		}
	}
	p, err := paginate(repos, r.URL.Query())
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codePaginationNumber, err.Error())
		return
	}
	if l := p.link("/v2/_catalog"); l != "" {
		w.Header().Set("Link", l)
	}
	writeJSON(w, "application/json", struct {
		Repositories []string `json:"repositories"`
	}{Repositories: nonNil(p.entries)})
}

// serveTags lists a repository's tags in lexical order, paginated.
func (a *api) serveTags(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if !allowMethods(w, r, http.MethodGet) {
		return
	}
	tags, found := a.store.tags(info.repository)
	if !found {
		writeRegistryError(w, http.StatusNotFound, codeNameUnknown, fmt.Sprintf("repository %q not known", info.repository))
		return
	}
	p, err := paginate(tags, r.URL.Query())
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codePaginationNumber, err.Error())
		return
	}
	if l := p.link("/v2/" + info.repository + "/tags/list"); l != "" {
		w.Header().Set("Link", l)
	}
	writeJSON(w, "application/json", struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{Name: info.repository, Tags: nonNil(p.entries)})
}

// nonNil turns a nil list into an empty one, so JSON carries [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// serveManifest serves GET and HEAD with content negotiation, and PUT and DELETE when writable.
func (a *api) serveManifest(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if !allowMethods(w, r, http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete) {
		return
	}
	switch r.Method {
	case http.MethodPut:
		a.putManifest(w, r, info)
		return
	case http.MethodDelete:
		a.deleteManifest(w, info)
		return
	}
	m, repoFound, found := a.store.manifest(info.repository, info.reference)
	if !found {
		writeManifestNotFound(w, info, repoFound)
		return
	}
	m, err := a.negotiated(info.repository, m, parseAccept(r.Header.Values("Accept")))
	if err != nil {
		writeRegistryError(w, http.StatusNotFound, codeManifestUnknown, err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", m.mediaType)
	h.Set("Content-Length", strconv.Itoa(len(m.data)))
	h.Set("Docker-Content-Digest", m.digest.String())
	h.Set("ETag", `"`+m.digest.String()+`"`)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(m.data)
	}
}

// writeManifestNotFound answers 404: NAME_UNKNOWN for an unknown repository, else MANIFEST_UNKNOWN.
func writeManifestNotFound(w http.ResponseWriter, info requestInfo, repoFound bool) {
	if !repoFound {
		writeRegistryError(w, http.StatusNotFound, codeNameUnknown, fmt.Sprintf("repository %q not known", info.repository))
		return
	}
	writeRegistryError(w, http.StatusNotFound, codeManifestUnknown,
		fmt.Sprintf("manifest %q not known in %q", info.reference, info.repository))
}

// deleteManifest answers DELETE: by digest the manifest goes with every tag naming it, by tag only
// the tag (the spec's tag deletion); 202 Accepted, or 404 when the repository or reference is
// unknown (so a second delete of the same digest is 404).
func (a *api) deleteManifest(w http.ResponseWriter, info requestInfo) {
	var repoFound, found bool
	if isDigest(info.reference) {
		if _, err := parseDigest(info.reference); err != nil {
			writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, err.Error())
			return
		}
		repoFound, found = a.store.deleteManifest(info.repository, info.reference)
	} else {
		repoFound, found = a.store.deleteTag(info.repository, info.reference)
	}
	if !found {
		writeManifestNotFound(w, info, repoFound)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// negotiated returns the manifest to serve a client accepting accept (see Negotiation).
func (a *api) negotiated(repo string, m storedManifest, accept acceptSet) (storedManifest, error) {
	switch negotiate(a.negotiation, accept, m.mediaType) {
	case serveStored:
		return m, nil
	case notAcceptable:
		return storedManifest{}, fmt.Errorf("manifest is %s, which the client does not accept", m.mediaType)
	}
	for _, d := range m.doc.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != "amd64" {
			continue
		}
		child, _, found := a.store.manifest(repo, d.Digest.String())
		if found && negotiate(a.negotiation, accept, child.mediaType) == serveStored {
			return child, nil
		}
	}
	return storedManifest{}, fmt.Errorf("manifest is %s, which the client does not accept, and it has no linux/amd64 manifest the client accepts", m.mediaType)
}

// putManifest stores a pushed manifest after checking its media type, digest and references.
func (a *api) putManifest(w http.ResponseWriter, r *http.Request, info requestInfo) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxManifestSize))
	if err != nil {
		writeRegistryError(w, http.StatusRequestEntityTooLarge, codeSizeInvalid, err.Error())
		return
	}
	mediaType := strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0])
	m, err := parseManifest(mediaType, data)
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeManifestInvalid, err.Error())
		return
	}
	var tags []string
	if isDigest(info.reference) {
		// Stored under the digest it was put by, which may be sha512; by tag it is sha256.
		want, err := parseDigest(info.reference)
		if err == nil {
			err = verifyDigest(want, data)
		}
		if err != nil {
			writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, "manifest: "+err.Error())
			return
		}
		m.digest = want
		// The spec's tag parameters: PUT /v2/<name>/manifests/<digest>?tag=a&tag=b.
		tags = r.URL.Query()["tag"]
	} else {
		tags = []string{info.reference}
	}
	for _, tag := range tags {
		if !tagRE.MatchString(tag) {
			writeRegistryError(w, http.StatusBadRequest, codeTagInvalid, fmt.Sprintf("invalid tag %q", tag))
			return
		}
	}
	if err := a.store.putManifest(info.repository, tags, m, true); err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeManifestBlob, err.Error())
		return
	}
	h := w.Header()
	h.Set("Location", "/v2/"+info.repository+"/manifests/"+m.digest.String())
	h.Set("Docker-Content-Digest", m.digest.String())
	if isDigest(info.reference) && len(tags) > 0 {
		h.Set("OCI-Tag", strings.Join(tags, ", "))
	}
	if m.doc.Subject != nil {
		h.Set("OCI-Subject", m.doc.Subject.Digest.String())
	}
	w.WriteHeader(http.StatusCreated)
}

// serveBlob serves a blob the repository references, with RFC 9110 ranges from http.ServeContent,
// and deletes it from the repository on DELETE when writable.
func (a *api) serveBlob(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if !allowMethods(w, r, http.MethodGet, http.MethodHead, http.MethodDelete) {
		return
	}
	h, err := parseDigest(info.reference)
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, err.Error())
		return
	}
	if r.Method == http.MethodDelete {
		if !a.store.deleteBlob(info.repository, h) {
			writeBlobUnknown(w, info.repository, h)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	data, ok := a.store.blob(info.repository, h)
	if !ok {
		writeBlobUnknown(w, info.repository, h)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("Docker-Content-Digest", h.String())
	hdr.Set("ETag", `"`+h.String()+`"`)
	if !strings.HasPrefix(r.Header.Get("Range"), "bytes=") {
		// RFC 9110 §14.2: a range unit the server does not know is ignored; net/http would answer 416.
		r = r.Clone(r.Context())
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// writeBlobUnknown answers 404 BLOB_UNKNOWN for a blob repo does not serve.
func writeBlobUnknown(w http.ResponseWriter, repo string, h v1.Hash) {
	writeRegistryError(w, http.StatusNotFound, codeBlobUnknown, fmt.Sprintf("blob %s not known in %q", h, repo))
}

// mount links a blob from another repository the caller may pull (201); without from, from any
// repository the caller may pull that has it (the spec lets registries treat from as optional).
// When it cannot, the client gets an upload session instead, as the distribution spec asks.
func (a *api) mount(w http.ResponseWriter, r *http.Request, info requestInfo) bool {
	q := r.URL.Query()
	h, err := parseDigest(q.Get("mount"))
	if err != nil {
		return false
	}
	mayPull := callerFrom(r.Context())
	if from := q.Get("from"); from != "" {
		if !mayPull(from) || !a.store.mountBlob(info.repository, from, h) {
			return false
		}
	} else if !a.store.mountFromAny(info.repository, h, mayPull) {
		return false
	}
	w.Header().Set("Location", "/v2/"+info.repository+"/blobs/"+h.String())
	w.Header().Set("Docker-Content-Digest", h.String())
	w.WriteHeader(http.StatusCreated)
	return true
}

// serveReferrers answers the OCI 1.1 referrers API: an index of the manifests whose subject is the
// digest, filtered by artifactType when asked. It never answers 404, as the spec requires.
func (a *api) serveReferrers(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if !allowMethods(w, r, http.MethodGet) {
		return
	}
	subject, err := parseDigest(info.reference)
	if err != nil {
		writeRegistryError(w, http.StatusBadRequest, codeDigestInvalid, err.Error())
		return
	}
	descs := a.store.referrers(info.repository, subject)
	if at := r.URL.Query().Get("artifactType"); at != "" {
		descs = slices.DeleteFunc(descs, func(d v1.Descriptor) bool { return d.ArtifactType != at })
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	writeJSON(w, string(types.OCIImageIndex), referrersIndex(descs))
}

// referrersIndex is the OCI index listing referrers.
func referrersIndex(descs []v1.Descriptor) v1.IndexManifest {
	if descs == nil {
		descs = []v1.Descriptor{}
	}
	return v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: descs}
}
