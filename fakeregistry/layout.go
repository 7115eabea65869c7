package fakeregistry

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// RefNameAnnotation is the index.json annotation of an OCI image layout that names a manifest's tag.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// LayoutSpec serves the content of an OCI image layout directory (as written by go-containerregistry's
// layout package, skopeo or buildx) under one repository: every manifest or index its index.json
// lists is pullable by digest and, when it carries RefNameAnnotation, by that tag.
type LayoutSpec struct {
	// Repository is the repository path the layout's images are served under; it must not also be a
	// catalog repository.
	Repository string `json:"repository"`
	// Path is the layout directory (the one holding index.json); a relative path in a catalog file is
	// relative to the file's directory.
	Path string `json:"path"`
}

// layoutContent is what one layout adds to a catalog: its blobs and manifests, its top-level
// images and the ground truth of each manifest.
type layoutContent struct {
	blobs     map[v1.Hash][]byte
	manifests []manifestPut
	images    []Image
	byDigest  map[string]ArchSet
}

// layoutReader copies one layout's content, walking each manifest once.
type layoutReader struct {
	path    layout.Path
	repo    string
	content *layoutContent
	walked  map[v1.Hash]walked
}

// walked is what a manifest and everything below it run on.
type walked struct {
	platforms []Platform
	// noBinaries is true when every image below carries BundleMediaTypeLabel.
	noBinaries   bool
	attestations bool
}

// resolveLayoutPaths makes the relative layout paths of a catalog file relative to its directory,
// so a catalog means the same whatever directory the registry starts in.
func resolveLayoutPaths(file string, layouts []LayoutSpec) []LayoutSpec {
	out := make([]LayoutSpec, len(layouts))
	for i, l := range layouts {
		if l.Path != "" && !filepath.IsAbs(l.Path) {
			l.Path = filepath.Join(filepath.Dir(file), l.Path)
		}
		out[i] = l
	}
	return out
}

// readLayouts reads every layout of spec; errors name the layout's field path and directory.
func readLayouts(spec CatalogSpec) ([]*layoutContent, []*strictyaml.FieldError) {
	var out []*layoutContent
	var errs []*strictyaml.FieldError
	for i, l := range spec.Layouts {
		c, err := readLayout(l)
		if err != nil {
			errs = append(errs, strictyaml.Field(strictyaml.JoinPath(strictyaml.IndexPath("layouts", i), "path"), l.Path, err.Error()))
			continue
		}
		out = append(out, c)
	}
	return out, errs
}

// readLayout copies the content of the layout l describes.
func readLayout(l LayoutSpec) (*layoutContent, error) {
	p, err := layout.FromPath(l.Path)
	if err != nil {
		return nil, fmt.Errorf("not an OCI image layout: %w", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading index.json: %w", err)
	}
	top, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading index.json: %w", err)
	}
	if len(top.Manifests) == 0 {
		return nil, fmt.Errorf("index.json lists no manifests")
	}
	r := &layoutReader{path: p, repo: l.Repository, walked: map[v1.Hash]walked{},
		content: &layoutContent{blobs: map[v1.Hash][]byte{}, byDigest: map[string]ArchSet{}}}
	byDigest := map[v1.Hash]int{}
	tags := map[string]int{}
	for i, desc := range top.Manifests {
		if err := r.addTopLevel(desc, byDigest, tags); err != nil {
			return nil, fmt.Errorf("index.json manifests[%d] (%s): %w", i, desc.Digest, err)
		}
	}
	return r.content, nil
}

// addTopLevel copies one entry of index.json and records it as an image, merging entries that
// name the same digest under different tags.
func (r *layoutReader) addTopLevel(desc v1.Descriptor, byDigest map[v1.Hash]int, tags map[string]int) error {
	w, err := r.walk(desc)
	if err != nil {
		return err
	}
	tag, err := refNameTag(desc.Annotations[RefNameAnnotation])
	if err != nil {
		return err
	}
	i, seen := byDigest[desc.Digest]
	if !seen {
		i = len(r.content.images)
		byDigest[desc.Digest] = i
		r.content.images = append(r.content.images, r.image(desc, w))
	}
	if tag == "" {
		return nil
	}
	if prev, dup := tags[tag]; dup && prev != i {
		return fmt.Errorf("tag %q names two different manifests", tag)
	}
	tags[tag] = i
	im := &r.content.images[i]
	if !seen || !slices.Contains(im.Tags, tag) {
		im.Tags = append(im.Tags, tag)
		data := r.content.blobs[desc.Digest]
		r.content.manifests = append(r.content.manifests,
			manifestPut{repository: r.repo, reference: tag, mediaType: string(desc.MediaType), data: data})
	}
	return nil
}

// image describes a top-level manifest of the layout.
func (r *layoutReader) image(desc v1.Descriptor, w walked) Image {
	return Image{
		Repository:   r.repo,
		Digest:       desc.Digest.String(),
		MediaType:    string(desc.MediaType),
		Format:       formatOf(desc.MediaType),
		Platforms:    w.platforms,
		Attestations: w.attestations,
		Arches:       archSetOf(w.platforms, w.noBinaries),
	}
}

// refNameTag turns a ref.name annotation into a tag: tools write either a bare tag or a whole
// reference (registry/repo:tag), whose tag is used. An empty annotation means no tag.
func refNameTag(refName string) (string, error) {
	if refName == "" {
		return "", nil
	}
	tag := refName
	if i := strings.LastIndexByte(refName, ':'); i > strings.LastIndexByte(refName, '/') {
		tag = refName[i+1:]
	}
	if !tagRE.MatchString(tag) {
		return "", fmt.Errorf("annotation %s %q does not name a valid tag", RefNameAnnotation, refName)
	}
	return tag, nil
}

// walk copies the manifest desc names and everything it references, once per digest.
func (r *layoutReader) walk(desc v1.Descriptor) (walked, error) {
	if w, ok := r.walked[desc.Digest]; ok {
		return w, nil
	}
	data, err := r.blob(desc.Digest)
	if err != nil {
		return walked{}, err
	}
	m, err := parseManifest(string(desc.MediaType), data)
	if err != nil {
		return walked{}, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	var w walked
	if m.isIndex() {
		w, err = r.walkIndex(m)
	} else {
		w, err = r.walkImage(desc, m)
	}
	if err != nil {
		return walked{}, err
	}
	r.walked[desc.Digest] = w
	r.content.byDigest[r.repo+"@"+desc.Digest.String()] = archSetOf(w.platforms, w.noBinaries)
	r.content.manifests = append(r.content.manifests,
		manifestPut{repository: r.repo, reference: desc.Digest.String(), mediaType: m.mediaType, data: data})
	return w, nil
}

// walkIndex walks an index's children; attestation entries are copied but run nowhere.
func (r *layoutReader) walkIndex(m storedManifest) (walked, error) {
	w := walked{noBinaries: true}
	images := 0
	for _, child := range m.doc.Manifests {
		cw, err := r.walk(child)
		if err != nil {
			return walked{}, err
		}
		if isAttestation(child) {
			w.attestations = true
			continue
		}
		images++
		w.platforms = append(w.platforms, cw.platforms...)
		w.noBinaries = w.noBinaries && cw.noBinaries
		w.attestations = w.attestations || cw.attestations
	}
	w.noBinaries = w.noBinaries && images > 0
	return w, nil
}

// isAttestation reports whether an index entry is a buildx attestation rather than an image.
func isAttestation(d v1.Descriptor) bool {
	return d.Annotations[AttestationReferenceTypeAnnotation] != "" ||
		d.Platform != nil && d.Platform.OS == "unknown"
}

// layoutConfig is the part of an image configuration that says where the image runs.
type layoutConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant"`
	Config       struct {
		Labels map[string]string `json:"Labels"`
	} `json:"config"`
}

// walkImage copies an image manifest's config and distributable layers and reads its platform,
// from the index entry when it has one, else from the config.
func (r *layoutReader) walkImage(desc v1.Descriptor, m storedManifest) (walked, error) {
	if m.doc.Config == nil {
		return walked{}, fmt.Errorf("manifest %s has no config", desc.Digest)
	}
	cfgData, err := r.blob(m.doc.Config.Digest)
	if err != nil {
		return walked{}, err
	}
	for _, l := range m.doc.Layers {
		if !l.MediaType.IsDistributable() {
			continue
		}
		if _, err := r.blob(l.Digest); err != nil {
			return walked{}, err
		}
	}
	var cfg layoutConfig
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		// Artifacts (signatures, SBOMs) have configs that are not image configs: they run nowhere.
		return walked{}, nil
	}
	p := Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	if desc.Platform != nil {
		p = Platform{OS: desc.Platform.OS, Architecture: desc.Platform.Architecture, Variant: desc.Platform.Variant}
	}
	w := walked{noBinaries: cfg.Config.Labels[BundleMediaTypeLabel] != ""}
	if p.OS != "" && p.Architecture != "" {
		w.platforms = []Platform{p}
	}
	return w, nil
}

// blob reads a blob of the layout, checks its digest and keeps it for the catalog.
func (r *layoutReader) blob(h v1.Hash) ([]byte, error) {
	if data, ok := r.content.blobs[h]; ok {
		return data, nil
	}
	data, err := r.path.Bytes(h)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	if err := verifyDigest(h, data); err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	r.content.blobs[h] = data
	return data, nil
}

// formatOf names the Format of a top-level manifest media type.
func formatOf(mt types.MediaType) Format {
	switch mt {
	case types.OCIImageIndex:
		return FormatOCIIndex
	case types.DockerManifestList:
		return FormatDockerManifestList
	case types.DockerManifestSchema2:
		return FormatDockerManifest
	default:
		return FormatOCIManifest
	}
}
