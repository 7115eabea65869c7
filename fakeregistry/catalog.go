package fakeregistry

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// Format is how an image's top-level manifest is serialised.
type Format string

const (
	// FormatOCIIndex is an OCI image index (application/vnd.oci.image.index.v1+json) of OCI manifests.
	FormatOCIIndex Format = "oci-index"
	// FormatDockerManifestList is a Docker manifest list of Docker schema2 manifests.
	FormatDockerManifestList Format = "docker-manifest-list"
	// FormatOCIManifest is a single OCI image manifest (exactly one platform).
	FormatOCIManifest Format = "oci-manifest"
	// FormatDockerManifest is a single Docker schema2 manifest (exactly one platform).
	FormatDockerManifest Format = "docker-manifest"
)

// Formats lists every supported image format.
func Formats() []Format {
	return []Format{FormatOCIIndex, FormatDockerManifestList, FormatOCIManifest, FormatDockerManifest}
}

// IsList reports whether the format is a multi-platform list (index or manifest list).
func (f Format) IsList() bool {
	return f == FormatOCIIndex || f == FormatDockerManifestList
}

// CatalogSpec is the declarative content of a registry, as written in a catalog YAML file.
type CatalogSpec struct {
	// Repositories are written out image by image.
	Repositories []RepositorySpec `json:"repositories,omitempty"`
	// Generate adds generated repositories, one image each, after Repositories.
	Generate []GenerateSpec `json:"generate,omitempty"`
	// Layouts adds repositories served from OCI image layout directories, after Generate.
	Layouts []LayoutSpec `json:"layouts,omitempty"`
	// Negotiation is how manifests are served to clients that do not accept their media type;
	// default NegotiateDefaultPlatform.
	Negotiation Negotiation `json:"negotiation,omitempty"`
}

// RepositorySpec is one repository and its images.
type RepositorySpec struct {
	// Name is the repository path, e.g. library/busybox or team/app/api.
	Name string `json:"name"`
	// Images are the repository's images; their tags must not repeat within the repository.
	Images []ImageSpec `json:"images"`
}

// ImageSpec is one image: its tags, format and platforms.
type ImageSpec struct {
	// Tags point at the image; an image without tags is reachable by digest only.
	Tags []string `json:"tags,omitempty"`
	// Format is the top-level manifest format.
	Format Format `json:"format"`
	// Platforms are os/architecture[/variant] strings; single-manifest formats take exactly one.
	Platforms []string `json:"platforms"`
	// Attestations adds a buildx-style attestation manifest (platform unknown/unknown) per platform; list
	// formats only.
	Attestations bool `json:"attestations,omitempty"`
	// NoBinaries marks an image without executables (operator-bundle style label) that runs anywhere.
	NoBinaries bool `json:"noBinaries,omitempty"`
}

// ArchSet is the ground truth of where an image can run.
type ArchSet struct {
	// NoBinaries is true for images without executables, which run on any architecture.
	NoBinaries bool
	// Architectures are the image's linux architectures, sorted and unique, without variants.
	Architectures []string
}

// Allows reports whether a pod using the image can run on a linux node of architecture arch.
func (s ArchSet) Allows(arch string) bool {
	return s.NoBinaries || slices.Contains(s.Architectures, arch)
}

// Image is one built image of a catalog.
type Image struct {
	// Repository is the repository path.
	Repository string
	// Tags are the image's tags.
	Tags []string
	// Digest is the digest of the top-level manifest (index, list or single manifest).
	Digest string
	// MediaType is the media type of the top-level manifest.
	MediaType string
	// Format is the top-level manifest format.
	Format Format
	// Platforms are the image's platforms, in catalog order, attestations not included.
	Platforms []Platform
	// Attestations is true when the list carries one attestation entry per platform.
	Attestations bool
	// Arches is where the image can run.
	Arches ArchSet
}

// ErrUnknownReference is returned for a reference the catalog does not hold.
var ErrUnknownReference = errors.New("reference not in catalog")

// Catalog is a validated catalog with its deterministic content built. It is immutable and safe for
// concurrent use.
type Catalog struct {
	images []Image
	// byTag maps repository:tag to an index into images.
	byTag map[string]int
	// byDigest maps repository@digest of every manifest (top-level, per platform, attestation) to its
	// arch set.
	byDigest    map[string]ArchSet
	content     *content
	negotiation Negotiation
}

// LoadCatalog reads, strictly decodes, validates and builds the catalog file at path. Layouts are
// served after the file's own (e.g. from the command line); their relative paths are taken as they
// are, while the file's are relative to its directory.
func LoadCatalog(path string, layouts ...LayoutSpec) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	return parseCatalog(path, data, layouts)
}

// ParseCatalog strictly decodes, validates and builds a catalog from YAML; file names it in errors
// and is the base of relative layout paths.
func ParseCatalog(file string, data []byte) (*Catalog, error) {
	return parseCatalog(file, data, nil)
}

// parseCatalog is ParseCatalog with layouts added after the file's.
func parseCatalog(file string, data []byte, layouts []LayoutSpec) (*Catalog, error) {
	var spec CatalogSpec
	root, errs := strictyaml.Decode(data, &spec, strictyaml.Options{})
	if len(errs) > 0 {
		return nil, strictyaml.Join(file, errs)
	}
	spec.Layouts = append(resolveLayoutPaths(file, spec.Layouts), layouts...)
	repos, layoutContents, errs := spec.expand()
	if len(errs) > 0 {
		return nil, strictyaml.Join(file, strictyaml.Locate(root, errs))
	}
	return build(spec, repos, layoutContents)
}

// NewCatalog validates spec and builds its content; errors are strictyaml.FieldErrors with paths into spec.
// Relative layout paths are relative to the working directory.
func NewCatalog(spec CatalogSpec) (*Catalog, error) {
	repos, layoutContents, errs := spec.expand()
	if len(errs) > 0 {
		return nil, strictyaml.Join("", errs)
	}
	return build(spec, repos, layoutContents)
}

// Negotiation returns how the catalog's manifests are served to clients that do not accept them.
func (c *Catalog) Negotiation() Negotiation {
	return c.negotiation
}

// Images returns every image of the catalog, repositories in catalog order.
func (c *Catalog) Images() []Image {
	return slices.Clone(c.images)
}

// Image returns the image a tag or digest reference points at (see TrueArchitectures for the forms).
func (c *Catalog) Image(ref string) (Image, error) {
	repo, tag, dgst, err := splitReference(ref)
	if err != nil {
		return Image{}, err
	}
	if dgst != "" {
		for _, im := range c.images {
			if im.Repository == repo && im.Digest == dgst {
				return im, nil
			}
		}
		return Image{}, fmt.Errorf("%w: %q is not a top-level manifest", ErrUnknownReference, ref)
	}
	i, ok := c.byTag[repo+":"+tag]
	if !ok {
		return Image{}, fmt.Errorf("%w: %q", ErrUnknownReference, ref)
	}
	return c.images[i], nil
}

// TrueArchitectures returns where the image behind ref can run: the linux architectures of its
// platforms, or NoBinaries for images without executables. ref is [host[:port]/]repository[:tag][@digest]
// (an optional docker:// or // prefix is ignored); a digest wins over a tag and may name the top-level
// manifest or one per-platform manifest (then only that platform counts). A missing tag means latest.
// Repositories match exactly: short names are not expanded to library/.
func (c *Catalog) TrueArchitectures(ref string) (ArchSet, error) {
	repo, tag, dgst, err := splitReference(ref)
	if err != nil {
		return ArchSet{}, err
	}
	if dgst != "" {
		s, ok := c.byDigest[repo+"@"+dgst]
		if !ok {
			return ArchSet{}, fmt.Errorf("%w: %q", ErrUnknownReference, ref)
		}
		return cloneArchSet(s), nil
	}
	i, ok := c.byTag[repo+":"+tag]
	if !ok {
		return ArchSet{}, fmt.Errorf("%w: %q", ErrUnknownReference, ref)
	}
	return cloneArchSet(c.images[i].Arches), nil
}

// cloneArchSet copies s so callers cannot change the catalog.
func cloneArchSet(s ArchSet) ArchSet {
	s.Architectures = slices.Clone(s.Architectures)
	return s
}

// splitReference splits [scheme][host/]repo[:tag][@digest] into repository, tag and digest.
func splitReference(ref string) (repo, tag, dgst string, err error) {
	name := strings.TrimPrefix(strings.TrimPrefix(ref, "docker:"), "//")
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, dgst = name[:i], name[i+1:]
		if _, err := parseDigest(dgst); err != nil {
			return "", "", "", fmt.Errorf("reference %q: %w", ref, err)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
	}
	if i := strings.IndexByte(name, '/'); i >= 0 {
		if first := name[:i]; strings.ContainsAny(first, ".:") || first == "localhost" {
			name = name[i+1:]
		}
	}
	if name == "" {
		return "", "", "", fmt.Errorf("reference %q: empty repository", ref)
	}
	if tag == "" {
		tag = "latest"
	}
	return name, tag, dgst, nil
}

// repoNameRE is the distribution-spec repository name grammar (lower case path components).
var repoNameRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)

// tagRE is the distribution-spec tag grammar.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// placedRepository is a repository with the field path it came from, for error messages.
type placedRepository struct {
	path string
	repo RepositorySpec
}

// expand validates the spec, runs its generators, reads its layouts and returns every repository and
// layout, or the field errors.
func (spec CatalogSpec) expand() ([]placedRepository, []*layoutContent, []*strictyaml.FieldError) {
	var errs []*strictyaml.FieldError
	if spec.Negotiation != "" && !slices.Contains(Negotiations(), spec.Negotiation) {
		errs = append(errs, strictyaml.Field("negotiation", spec.Negotiation,
			fmt.Sprintf("unknown negotiation, want one of %v", Negotiations())))
	}
	var repos []placedRepository
	for i, r := range spec.Repositories {
		path := strictyaml.IndexPath("repositories", i)
		errs = append(errs, validateRepository(path, r)...)
		repos = append(repos, placedRepository{path: path, repo: r})
	}
	for i, g := range spec.Generate {
		path := strictyaml.IndexPath("generate", i)
		if gerrs := validateGenerate(path, g); len(gerrs) > 0 {
			errs = append(errs, gerrs...)
			continue
		}
		for _, r := range generate(g) {
			repos = append(repos, placedRepository{path: path, repo: r})
		}
	}
	errs = append(errs, uniqueRepositories(repos, spec.Layouts)...)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	layouts, errs := readLayouts(spec)
	return repos, layouts, errs
}

// uniqueRepositories checks that catalog and layout repositories are valid and named once.
func uniqueRepositories(repos []placedRepository, layouts []LayoutSpec) []*strictyaml.FieldError {
	var errs []*strictyaml.FieldError
	first := make(map[string]string, len(repos)+len(layouts))
	// claim records that the entry at path names repository name through its field.
	claim := func(path, field, name string) {
		if prev, ok := first[name]; ok {
			errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, field), name, fmt.Sprintf("duplicate repository, first at %s", prev)))
			return
		}
		first[name] = path
	}
	for _, p := range repos {
		claim(p.path, "name", p.repo.Name)
	}
	for i, l := range layouts {
		path := strictyaml.IndexPath("layouts", i)
		if !repoNameRE.MatchString(l.Repository) {
			errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "repository"), l.Repository, "invalid repository name"))
		}
		if l.Path == "" {
			errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "path"), l.Path, "layout directory missing"))
		}
		claim(path, "repository", l.Repository)
	}
	return errs
}

// validateRepository checks one repository at path.
func validateRepository(path string, r RepositorySpec) []*strictyaml.FieldError {
	var errs []*strictyaml.FieldError
	if !repoNameRE.MatchString(r.Name) {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "name"), r.Name, "invalid repository name"))
	}
	if len(r.Images) == 0 {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "images"), r.Images, "repository has no images"))
	}
	tags := map[string]string{}
	for i, im := range r.Images {
		ipath := strictyaml.IndexPath(strictyaml.JoinPath(path, "images"), i)
		errs = append(errs, validateImage(ipath, im)...)
		for j, t := range im.Tags {
			tpath := strictyaml.IndexPath(strictyaml.JoinPath(ipath, "tags"), j)
			if prev, ok := tags[t]; ok {
				errs = append(errs, strictyaml.Field(tpath, t,
					fmt.Sprintf("duplicate tag in repository %q, first at %s", r.Name, prev)))
				continue
			}
			tags[t] = tpath
		}
	}
	return errs
}

// validateImage checks one image at path.
func validateImage(path string, im ImageSpec) []*strictyaml.FieldError {
	var errs []*strictyaml.FieldError
	for j, t := range im.Tags {
		if !tagRE.MatchString(t) {
			errs = append(errs, strictyaml.Field(strictyaml.IndexPath(strictyaml.JoinPath(path, "tags"), j), t, "invalid tag"))
		}
	}
	if !slices.Contains(Formats(), im.Format) {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "format"), im.Format, unknownFormatReason()))
	}
	errs = append(errs, validatePlatforms(strictyaml.JoinPath(path, "platforms"), im.Platforms)...)
	if !im.Format.IsList() && len(im.Platforms) > 1 && slices.Contains(Formats(), im.Format) {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "platforms"), im.Platforms,
			fmt.Sprintf("format %s takes exactly one platform", im.Format)))
	}
	if im.Attestations && !im.Format.IsList() && slices.Contains(Formats(), im.Format) {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "attestations"), im.Attestations,
			fmt.Sprintf("attestations need a list format, not %s", im.Format)))
	}
	return errs
}

// validatePlatforms checks a platform list at path: not empty, each valid, none repeated.
func validatePlatforms(path string, platforms []string) []*strictyaml.FieldError {
	if len(platforms) == 0 {
		return []*strictyaml.FieldError{strictyaml.Field(path, []string{}, "empty platform list")}
	}
	var errs []*strictyaml.FieldError
	seen := map[string]bool{}
	for i, s := range platforms {
		ppath := strictyaml.IndexPath(path, i)
		p, err := ParsePlatform(s)
		if err != nil {
			errs = append(errs, strictyaml.Field(ppath, s, strings.TrimPrefix(err.Error(), fmt.Sprintf("platform %q: ", s))))
			continue
		}
		if seen[p.String()] {
			errs = append(errs, strictyaml.Field(ppath, s, "duplicate platform"))
		}
		seen[p.String()] = true
	}
	return errs
}

// unknownFormatReason lists the valid formats for error messages.
func unknownFormatReason() string {
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "unknown format, want one of " + strings.Join(names, ", ")
}
