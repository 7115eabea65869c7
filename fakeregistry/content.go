package fakeregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BundleMediaTypeLabel is the config label that marks operator-bundle images, which carry no binaries.
	BundleMediaTypeLabel = "operators.operatorframework.io.bundle.mediatype.v1"
	// SourceLabel is the config label naming the catalog image a config belongs to; it keeps digests
	// unique per image.
	SourceLabel = "dev.archgate.fakeregistry.source"
	// AttestationReferenceTypeAnnotation is the index annotation buildx puts on attestation entries.
	AttestationReferenceTypeAnnotation = "vnd.docker.reference.type"
	// AttestationReferenceDigestAnnotation names the image manifest an attestation entry describes.
	AttestationReferenceDigestAnnotation = "vnd.docker.reference.digest"
	// AttestationArtifactType is the artifactType of attestation manifests, which also carry the image
	// manifest as their OCI 1.1 subject, so the referrers API lists them.
	AttestationArtifactType = "application/vnd.in-toto+json"
)

// createdTime is the fixed creation time of every generated config, so content is deterministic.
const createdTime = "2024-01-01T00:00:00Z"

// manifestPut is one manifest to store in the registry under a tag or digest.
type manifestPut struct {
	repository string
	reference  string
	mediaType  string
	data       []byte
}

// content is the deterministic blobs and manifests of a catalog, in push order.
type content struct {
	blobs     map[v1.Hash][]byte
	manifests []manifestPut
}

// layerKey identifies a shared layer blob.
type layerKey struct {
	platform   string
	noBinaries bool
	docker     bool
}

// layer is a built layer blob with its uncompressed digest.
type layer struct {
	desc   v1.Descriptor
	diffID v1.Hash
}

// builder turns catalog repositories into content.
type builder struct {
	content  *content
	layers   map[layerKey]layer
	byDigest map[string]ArchSet
}

// build validates nothing (repos are valid) and produces the catalog's content and indexes.
func build(spec CatalogSpec, repos []placedRepository, layouts []*layoutContent) (*Catalog, error) {
	b := &builder{
		content:  &content{blobs: map[v1.Hash][]byte{}},
		layers:   map[layerKey]layer{},
		byDigest: map[string]ArchSet{},
	}
	c := &Catalog{byTag: map[string]int{}, byDigest: b.byDigest, content: b.content, negotiation: spec.Negotiation}
	if c.negotiation == "" {
		c.negotiation = NegotiateDefaultPlatform
	}
	for _, p := range repos {
		for i, spec := range p.repo.Images {
			im, err := b.image(p.repo.Name, i, spec)
			if err != nil {
				return nil, fmt.Errorf("building %s image %d: %w", p.repo.Name, i, err)
			}
			for _, t := range spec.Tags {
				c.byTag[p.repo.Name+":"+t] = len(c.images)
			}
			c.images = append(c.images, im)
		}
	}
	for _, l := range layouts {
		b.addLayout(c, l)
	}
	return c, nil
}

// addLayout adds a layout's content, images and ground truth to the catalog being built.
func (b *builder) addLayout(c *Catalog, l *layoutContent) {
	maps.Copy(b.content.blobs, l.blobs)
	maps.Copy(b.byDigest, l.byDigest)
	b.content.manifests = append(b.content.manifests, l.manifests...)
	for _, im := range l.images {
		for _, t := range im.Tags {
			c.byTag[im.Repository+":"+t] = len(c.images)
		}
		c.images = append(c.images, im)
	}
}

// image builds one image and records its manifests.
func (b *builder) image(repo string, index int, spec ImageSpec) (Image, error) {
	platforms := make([]Platform, 0, len(spec.Platforms))
	for _, s := range spec.Platforms {
		p, err := ParsePlatform(s)
		if err != nil {
			return Image{}, err
		}
		platforms = append(platforms, p)
	}
	source := fmt.Sprintf("%s#%d", repo, index)
	if len(spec.Tags) > 0 {
		source = repo + ":" + strings.Join(spec.Tags, ",")
	}
	im := Image{
		Repository:   repo,
		Tags:         slices.Clone(spec.Tags),
		Format:       spec.Format,
		Platforms:    platforms,
		Attestations: spec.Attestations,
		Arches:       archSetOf(platforms, spec.NoBinaries),
	}
	docker := spec.Format == FormatDockerManifest || spec.Format == FormatDockerManifestList
	var top manifestPut
	if !spec.Format.IsList() {
		desc, data, err := b.platformManifest(repo, source, platforms[0], docker, spec.NoBinaries)
		if err != nil {
			return Image{}, err
		}
		top = manifestPut{repository: repo, mediaType: string(desc.MediaType), data: data}
	} else {
		idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
		if docker {
			idx.MediaType = types.DockerManifestList
		}
		for _, p := range platforms {
			desc, data, err := b.platformManifest(repo, source, p, docker, spec.NoBinaries)
			if err != nil {
				return Image{}, err
			}
			b.putManifest(repo, desc, data)
			b.byDigest[repo+"@"+desc.Digest.String()] = archSetOf([]Platform{p}, spec.NoBinaries)
			idx.Manifests = append(idx.Manifests, desc)
		}
		if spec.Attestations {
			for _, img := range slices.Clone(idx.Manifests) {
				desc, data, err := b.attestationManifest(repo, img)
				if err != nil {
					return Image{}, err
				}
				b.putManifest(repo, desc, data)
				b.byDigest[repo+"@"+desc.Digest.String()] = ArchSet{}
				idx.Manifests = append(idx.Manifests, desc)
				if err := b.referrersTag(repo, img.Digest, desc, data); err != nil {
					return Image{}, err
				}
			}
		}
		data, err := json.Marshal(idx)
		if err != nil {
			return Image{}, fmt.Errorf("encoding index: %w", err)
		}
		top = manifestPut{repository: repo, mediaType: string(idx.MediaType), data: data}
	}
	d := digestOf(top.data)
	im.Digest = d.String()
	im.MediaType = top.mediaType
	b.byDigest[repo+"@"+im.Digest] = im.Arches
	if len(spec.Tags) == 0 {
		top.reference = im.Digest
		b.content.manifests = append(b.content.manifests, top)
	}
	for _, t := range spec.Tags {
		put := top
		put.reference = t
		b.content.manifests = append(b.content.manifests, put)
	}
	return im, nil
}

// referrersTag queues the OCI 1.1 tag-schema fallback for clients without the referrers API: the
// tag sha256-<hex> of the subject names an index of its referrers, here its one attestation.
func (b *builder) referrersTag(repo string, subject v1.Hash, att v1.Descriptor, data []byte) error {
	m, err := parseManifest(string(att.MediaType), data)
	if err != nil {
		return err
	}
	idx, err := json.Marshal(referrersIndex([]v1.Descriptor{referrerDescriptor(m)}))
	if err != nil {
		return fmt.Errorf("encoding referrers index: %w", err)
	}
	b.content.manifests = append(b.content.manifests, manifestPut{
		repository: repo, reference: referrersTagOf(subject), mediaType: string(types.OCIImageIndex), data: idx,
	})
	return nil
}

// referrersTagOf returns the tag-schema fallback tag of a subject digest: its algorithm and its
// encoded part truncated to 32 and 64 characters, joined by "-".
func referrersTagOf(subject v1.Hash) string {
	return subject.Algorithm[:min(len(subject.Algorithm), 32)] + "-" + subject.Hex[:min(len(subject.Hex), 64)]
}

// putManifest queues a manifest for storing by digest.
func (b *builder) putManifest(repo string, desc v1.Descriptor, data []byte) {
	b.content.manifests = append(b.content.manifests, manifestPut{
		repository: repo, reference: desc.Digest.String(), mediaType: string(desc.MediaType), data: data,
	})
}

// archSetOf derives the ground truth from platforms: linux architectures only, variants dropped.
func archSetOf(platforms []Platform, noBinaries bool) ArchSet {
	s := ArchSet{NoBinaries: noBinaries}
	for _, p := range platforms {
		if p.OS == "linux" && !slices.Contains(s.Architectures, p.Architecture) {
			s.Architectures = append(s.Architectures, p.Architecture)
		}
	}
	slices.Sort(s.Architectures)
	return s
}

// imageConfig is the subset of the OCI/Docker image configuration the registry serves.
type imageConfig struct {
	Created      string          `json:"created"`
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Variant      string          `json:"variant,omitempty"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
}

// containerConfig is the runtime part of an image configuration.
type containerConfig struct {
	Cmd    []string          `json:"Cmd,omitempty"`
	Labels map[string]string `json:"Labels,omitempty"`
}

// rootFS lists the uncompressed digests of an image's layers.
type rootFS struct {
	Type    string    `json:"type"`
	DiffIDs []v1.Hash `json:"diff_ids"`
}

// platformManifest builds the config, layer and manifest of one platform and returns the manifest's
// descriptor (with platform) and bytes. It stores the blobs.
func (b *builder) platformManifest(repo, source string, p Platform, docker, noBinaries bool) (v1.Descriptor, []byte, error) {
	l, err := b.layer(p, docker, noBinaries)
	if err != nil {
		return v1.Descriptor{}, nil, err
	}
	cfg := imageConfig{
		Created:      createdTime,
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Config:       containerConfig{Labels: map[string]string{SourceLabel: source}},
		RootFS:       rootFS{Type: "layers", DiffIDs: []v1.Hash{l.diffID}},
	}
	if noBinaries {
		cfg.Config.Labels[BundleMediaTypeLabel] = "registry+v1"
		cfg.Config.Labels["operators.operatorframework.io.bundle.package.v1"] = repo
	} else {
		cfg.Config.Cmd = []string{"/bin/app"}
	}
	cfgData, err := json.Marshal(cfg)
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("encoding config: %w", err)
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        b.addBlob(types.OCIConfigJSON, cfgData),
		Layers:        []v1.Descriptor{l.desc},
	}
	if docker {
		m.MediaType = types.DockerManifestSchema2
		m.Config.MediaType = types.DockerConfigJSON
	}
	data, err := json.Marshal(m)
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("encoding manifest: %w", err)
	}
	desc := v1.Descriptor{
		MediaType: m.MediaType,
		Size:      int64(len(data)),
		Digest:    digestOf(data),
		Platform:  &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant},
	}
	return desc, data, nil
}

// attestationManifest builds a buildx-style attestation manifest for the image manifest img and returns
// its index descriptor (platform unknown/unknown, reference annotations) and bytes.
func (b *builder) attestationManifest(repo string, img v1.Descriptor) (v1.Descriptor, []byte, error) {
	statement := map[string]any{
		"_type":         "https://in-toto.io/Statement/v0.1",
		"predicateType": "https://slsa.dev/provenance/v0.2",
		"subject": []map[string]any{{
			"name":   "pkg:docker/" + repo,
			"digest": map[string]string{"sha256": img.Digest.Hex},
		}},
		"predicate": map[string]any{"buildType": "https://mobyproject.org/buildkit@v1"},
	}
	stData, err := json.Marshal(statement)
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("encoding attestation: %w", err)
	}
	st := b.addBlob("application/vnd.in-toto+json", stData)
	st.Annotations = map[string]string{"in-toto.io/predicate-type": "https://slsa.dev/provenance/v0.2"}
	cfgData, err := json.Marshal(imageConfig{
		Created: createdTime, Architecture: "unknown", OS: "unknown",
		RootFS: rootFS{Type: "layers", DiffIDs: []v1.Hash{st.Digest}},
	})
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("encoding attestation config: %w", err)
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        b.addBlob(types.OCIConfigJSON, cfgData),
		Layers:        []v1.Descriptor{st},
		ArtifactType:  AttestationArtifactType,
		Subject:       &v1.Descriptor{MediaType: img.MediaType, Size: img.Size, Digest: img.Digest},
	}
	data, err := json.Marshal(m)
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("encoding attestation manifest: %w", err)
	}
	desc := v1.Descriptor{
		MediaType: m.MediaType,
		Size:      int64(len(data)),
		Digest:    digestOf(data),
		Platform:  &v1.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{
			AttestationReferenceDigestAnnotation: img.Digest.String(),
			AttestationReferenceTypeAnnotation:   "attestation-manifest",
		},
	}
	return desc, data, nil
}

// layer returns the shared tiny layer for a platform, building it on first use: a gzipped tar with one
// file, so blobs stay a few hundred bytes.
func (b *builder) layer(p Platform, docker, noBinaries bool) (layer, error) {
	key := layerKey{platform: p.String(), noBinaries: noBinaries, docker: docker}
	if l, ok := b.layers[key]; ok {
		return l, nil
	}
	name, body := "bin/app", "fakeregistry placeholder binary for "+p.String()+"\n"
	if noBinaries {
		name, body = "metadata/annotations.yaml", "annotations:\n  "+BundleMediaTypeLabel+": registry+v1\n"
	}
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	hdr := &tar.Header{
		Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg,
		ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return layer{}, fmt.Errorf("writing layer: %w", err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		return layer{}, fmt.Errorf("writing layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return layer{}, fmt.Errorf("writing layer: %w", err)
	}
	var gzBuf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gzBuf, gzip.BestCompression)
	if err != nil {
		return layer{}, fmt.Errorf("compressing layer: %w", err)
	}
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return layer{}, fmt.Errorf("compressing layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return layer{}, fmt.Errorf("compressing layer: %w", err)
	}
	mt := types.OCILayer
	if docker {
		mt = types.DockerLayer
	}
	l := layer{desc: b.addBlob(mt, gzBuf.Bytes()), diffID: digestOf(tarBuf.Bytes())}
	b.layers[key] = l
	return l, nil
}

// addBlob stores a blob and returns its descriptor.
func (b *builder) addBlob(mediaType types.MediaType, data []byte) v1.Descriptor {
	d := digestOf(data)
	b.content.blobs[d] = data
	return v1.Descriptor{MediaType: mediaType, Size: int64(len(data)), Digest: d}
}

// loadInto stores the content's blobs and manifests in s.
func (c *content) loadInto(s *store) error {
	for h, data := range c.blobs {
		s.putBlob("", h, data)
	}
	for _, put := range c.manifests {
		m, err := parseManifest(put.mediaType, put.data)
		if err != nil {
			return fmt.Errorf("loading manifest %s:%s: %w", put.repository, put.reference, err)
		}
		tags := []string{put.reference}
		if h, err := v1.NewHash(put.reference); err == nil {
			// A layout may name a manifest by a sha512 digest.
			m.digest, tags = digestWith(h.Algorithm, m.data), nil
		}
		if err := s.putManifest(put.repository, tags, m, false); err != nil {
			return fmt.Errorf("loading manifest %s:%s: %w", put.repository, put.reference, err)
		}
	}
	return nil
}
