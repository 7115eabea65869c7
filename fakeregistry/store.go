package fakeregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// store holds the registry's blobs and manifests. go-containerregistry's registry keeps manifests in
// a private map it serves without content negotiation, repository scoping, ordered catalogs or
// reference checks, so they live here; uploads write their blobs through putBlob.
type store struct {
	mu    sync.RWMutex
	blobs map[v1.Hash][]byte
	repos map[string]*repository
}

// repository is one repository's manifests, tags and the blobs it may serve.
type repository struct {
	manifests map[v1.Hash]storedManifest
	tags      map[string]v1.Hash
	// blobs are the digests a manifest of the repository references or a client uploaded to it:
	// a blob is served only from such repositories, as real registries link blobs per repository.
	blobs map[v1.Hash]bool
}

// storedManifest is a manifest with what the handlers need from its content.
type storedManifest struct {
	mediaType string
	data      []byte
	digest    v1.Hash
	doc       manifestDoc
}

// manifestDoc is the union of the fields of image manifests and indexes the registry reads.
type manifestDoc struct {
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType"`
	Config       *v1.Descriptor    `json:"config"`
	Layers       []v1.Descriptor   `json:"layers"`
	Manifests    []v1.Descriptor   `json:"manifests"`
	Subject      *v1.Descriptor    `json:"subject"`
	Annotations  map[string]string `json:"annotations"`
}

// manifestMediaTypes are the manifest types the registry accepts and serves.
var manifestMediaTypes = []string{
	string(types.OCIManifestSchema1), string(types.OCIImageIndex),
	string(types.DockerManifestSchema2), string(types.DockerManifestList),
}

// errMissingReference is returned when a manifest references content the repository lacks.
var errMissingReference = errors.New("manifest references unknown content")

// newStore returns an empty store.
func newStore() *store {
	return &store{blobs: map[v1.Hash][]byte{}, repos: map[string]*repository{}}
}

// parseManifest decodes data as a manifest of mediaType.
func parseManifest(mediaType string, data []byte) (storedManifest, error) {
	if !slices.Contains(manifestMediaTypes, mediaType) {
		return storedManifest{}, fmt.Errorf("unsupported manifest media type %q", mediaType)
	}
	var doc manifestDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return storedManifest{}, fmt.Errorf("decoding manifest: %w", err)
	}
	if doc.MediaType != "" && doc.MediaType != mediaType {
		return storedManifest{}, fmt.Errorf("manifest mediaType %q differs from Content-Type %q", doc.MediaType, mediaType)
	}
	return storedManifest{mediaType: mediaType, data: data, digest: digestOf(data), doc: doc}, nil
}

// isIndex reports whether the manifest is an OCI index or Docker manifest list.
func (m storedManifest) isIndex() bool {
	return types.MediaType(m.mediaType).IsIndex()
}

// blobRefs returns the distributable blobs an image manifest references (config and layers).
func (m storedManifest) blobRefs() []v1.Hash {
	var out []v1.Hash
	if m.doc.Config != nil {
		out = append(out, m.doc.Config.Digest)
	}
	for _, l := range m.doc.Layers {
		if l.MediaType.IsDistributable() {
			out = append(out, l.Digest)
		}
	}
	return out
}

// repo returns the named repository, creating it when create is set; callers hold mu.
func (s *store) repo(name string, create bool) *repository {
	r := s.repos[name]
	if r == nil && create {
		r = &repository{manifests: map[v1.Hash]storedManifest{}, tags: map[string]v1.Hash{}, blobs: map[v1.Hash]bool{}}
		s.repos[name] = r
	}
	return r
}

// putBlob stores a blob and makes it servable from repo.
func (s *store) putBlob(repo string, h v1.Hash, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[h] = data
	if repo != "" {
		s.repo(repo, true).blobs[h] = true
	}
}

// mountBlob makes a blob of repository from servable from repo; it reports whether from had it.
func (s *store) mountBlob(repo, from string, h v1.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.repo(from, false)
	if src == nil || !src.blobs[h] {
		return false
	}
	s.repo(repo, true).blobs[h] = true
	return true
}

// mountFromAny makes a blob servable from repo when some repository mayPull allows serves it; it
// reports whether one did.
func (s *store) mountFromAny(repo string, h v1.Hash, mayPull func(repo string) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, src := range s.repos {
		if src.blobs[h] && mayPull(name) {
			s.repo(repo, true).blobs[h] = true
			return true
		}
	}
	return false
}

// blob returns a blob servable from repo.
func (s *store) blob(repo string, h v1.Hash) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.repo(repo, false)
	if r == nil || !r.blobs[h] {
		return nil, false
	}
	data, ok := s.blobs[h]
	return data, ok
}

// putManifest stores m in repo under its digest and tags. With verify it first checks that every
// blob and child manifest m references is in the repository, as registries do for pushes; the
// catalog loads without it because its content is built complete.
func (s *store) putManifest(repo string, tags []string, m storedManifest, verify bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(repo, true)
	if verify {
		if err := r.checkReferences(m, s.blobs); err != nil {
			return err
		}
	}
	r.manifests[m.digest] = m
	for _, h := range m.blobRefs() {
		r.blobs[h] = true
	}
	for _, tag := range tags {
		r.tags[tag] = m.digest
	}
	return nil
}

// checkReferences reports the first blob or child manifest of m missing from r.
func (r *repository) checkReferences(m storedManifest, blobs map[v1.Hash][]byte) error {
	for _, h := range m.blobRefs() {
		if _, ok := blobs[h]; !ok || !r.blobs[h] {
			return fmt.Errorf("%w: blob %s", errMissingReference, h)
		}
	}
	for _, d := range m.doc.Manifests {
		if _, ok := r.manifests[d.Digest]; !ok {
			return fmt.Errorf("%w: manifest %s", errMissingReference, d.Digest)
		}
	}
	return nil
}

// manifest returns the manifest a tag or digest names in repo; repoFound is false for an unknown
// repository.
func (s *store) manifest(repo, reference string) (m storedManifest, repoFound, found bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.repo(repo, false)
	if r == nil {
		return storedManifest{}, false, false
	}
	m, found = r.resolve(reference)
	return m, true, found
}

// resolve returns the manifest a tag or digest names; callers hold the store's mu.
func (r *repository) resolve(reference string) (storedManifest, bool) {
	h, err := v1.NewHash(reference)
	if err != nil {
		var tagged bool
		if h, tagged = r.tags[reference]; !tagged {
			return storedManifest{}, false
		}
	}
	m, found := r.manifests[h]
	return m, found
}

// deleteManifest removes the manifest a digest (or a tag, resolved first) names from repo, with
// every tag naming it: afterwards neither its digest nor those tags resolve, and it is no longer
// among the referrers of its subject. The manifests an index lists and the blobs stay, as in a
// registry before garbage collection. repoFound is false for an unknown repository, found false
// when repo holds no such manifest.
func (s *store) deleteManifest(repo, reference string) (repoFound, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(repo, false)
	if r == nil {
		return false, false
	}
	m, found := r.resolve(reference)
	if !found {
		return true, false
	}
	delete(r.manifests, m.digest)
	maps.DeleteFunc(r.tags, func(_ string, h v1.Hash) bool { return h == m.digest })
	return true, true
}

// deleteTag removes a tag from repo; the manifest it named stays, by digest and under its other
// tags. repoFound is false for an unknown repository, found false for a tag repo does not have.
func (s *store) deleteTag(repo, tag string) (repoFound, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(repo, false)
	if r == nil {
		return false, false
	}
	if _, found = r.tags[tag]; found {
		delete(r.tags, tag)
	}
	return true, found
}

// deleteBlob stops repo serving a blob and reports whether it did. Bytes no repository serves any
// more are dropped; manifests that reference the blob stay, as in registries that do not check.
func (s *store) deleteBlob(repo string, h v1.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(repo, false)
	if r == nil || !r.blobs[h] {
		return false
	}
	delete(r.blobs, h)
	for _, other := range s.repos {
		if other.blobs[h] {
			return true
		}
	}
	delete(s.blobs, h)
	return true
}

// tags returns repo's tags in lexical order; found is false for an unknown repository.
func (s *store) tags(repo string) (tags []string, found bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.repo(repo, false)
	if r == nil {
		return nil, false
	}
	return slices.Sorted(maps.Keys(r.tags)), true
}

// repositories returns the repositories that hold at least one manifest, in lexical order.
func (s *store) repositories() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name, r := range s.repos {
		if len(r.manifests) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// referrers returns descriptors of repo's manifests whose subject is subject, ordered by digest. The
// artifact type is the manifest's artifactType, else its config media type (OCI distribution 1.1).
func (s *store) referrers(repo string, subject v1.Hash) []v1.Descriptor {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []v1.Descriptor{}
	r := s.repo(repo, false)
	if r == nil {
		return out
	}
	for _, h := range slices.SortedFunc(maps.Keys(r.manifests), compareHash) {
		m := r.manifests[h]
		if m.doc.Subject == nil || m.doc.Subject.Digest != subject {
			continue
		}
		out = append(out, referrerDescriptor(m))
	}
	return out
}

// referrerDescriptor describes m as an entry of a referrers index.
func referrerDescriptor(m storedManifest) v1.Descriptor {
	artifactType := m.doc.ArtifactType
	if artifactType == "" && m.doc.Config != nil {
		artifactType = string(m.doc.Config.MediaType)
	}
	return v1.Descriptor{
		MediaType:    types.MediaType(m.mediaType),
		Size:         int64(len(m.data)),
		Digest:       m.digest,
		ArtifactType: artifactType,
		Annotations:  m.doc.Annotations,
	}
}

// compareHash orders digests by their string form.
func compareHash(a, b v1.Hash) int {
	return compareStrings(a.String(), b.String())
}
