package fakeregistry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// layoutPlatforms are the platforms of the test layout's index, variant included.
var layoutPlatforms = []Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"},
	{OS: "linux", Architecture: "arm", Variant: "v7"}}

// platformImage builds a random OCI image whose config says it runs on p.
func platformImage(t *testing.T, p Platform) v1.Image {
	t.Helper()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
}

// writeTestLayout writes an OCI layout holding a multi-arch index tagged v1 and latest, a
// single-platform image tagged single, and an untagged image; it returns the index and single image.
func writeTestLayout(t *testing.T, dir string) (v1.ImageIndex, v1.Image) {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range layoutPlatforms {
		adds = append(adds, mutate.IndexAddendum{Add: platformImage(t, p), Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant},
		}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	single := platformImage(t, Platform{OS: "linux", Architecture: "s390x"})
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"v1", "example.com/team/app:latest"} {
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag})); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AppendImage(single, layout.WithAnnotations(map[string]string{RefNameAnnotation: "single"})); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(platformImage(t, Platform{OS: "linux", Architecture: "ppc64le"})); err != nil {
		t.Fatal(err)
	}
	return idx, single
}

// mustDigest returns the digest of a go-containerregistry manifest.
func mustDigest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLayoutServedAndInspected loads a layout written by go-containerregistry, pulls its index by
// tag and by digest with go-containerregistry, inspects it with containers/image as the operator
// does, and checks that the catalog's ground truth matches the layout's platforms.
func TestLayoutServedAndInspected(t *testing.T) {
	dir := t.TempDir()
	idx, single := writeTestLayout(t, dir)
	catalog := mustCatalog(t, CatalogSpec{Layouts: []LayoutSpec{{Repository: "oci/app", Path: dir}}})
	reg := startRegistry(t, Options{Catalog: catalog})
	idxDigest := mustDigest(t, idx)
	for _, ref := range []string{"v1", "latest", idxDigest.String()} {
		r, err := name.ParseReference(reg.Reference("oci/app", ref), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Index(r, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("remote.Index(%s): %v", ref, err)
		}
		if d := mustDigest(t, got); d != idxDigest {
			t.Errorf("index by %s has digest %s, want %s", ref, d, idxDigest)
		}
	}
	wantEntries := []string{"linux/amd64", "linux/arm64", "linux/arm/v7"}
	want := inspection{MIMEType: string(types.OCIImageIndex), Entries: wantEntries, Configs: wantEntries}
	sys := podmanSystemContext(t, reg, "", "")
	for _, ref := range []string{"v1", idxDigest.String()} {
		got, err := inspectImage(t.Context(), sys, reg.Reference("oci/app", ref))
		if err != nil {
			t.Fatalf("inspect %s: %v", ref, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("inspect %s (-want +got):\n%s", ref, diff)
		}
	}
	gotSingle, err := inspectImage(t.Context(), sys, reg.Reference("oci/app", "single"))
	if err != nil {
		t.Fatalf("inspect single: %v", err)
	}
	wantSingle := inspection{MIMEType: string(types.OCIManifestSchema1), Configs: []string{"linux/s390x"}}
	if diff := cmp.Diff(wantSingle, gotSingle); diff != "" {
		t.Errorf("inspect single (-want +got):\n%s", diff)
	}
	checkLayoutGroundTruth(t, catalog, idx, single)
}

// checkLayoutGroundTruth checks TrueArchitectures and Image against the layout's content.
func checkLayoutGroundTruth(t *testing.T, c *Catalog, idx v1.ImageIndex, single v1.Image) {
	t.Helper()
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		ref  string
		want ArchSet
	}{
		"index by tag":         {ref: "oci/app:v1", want: ArchSet{Architectures: []string{"amd64", "arm", "arm64"}}},
		"index by ref.name":    {ref: "oci/app:latest", want: ArchSet{Architectures: []string{"amd64", "arm", "arm64"}}},
		"index by digest":      {ref: "oci/app@" + mustDigest(t, idx).String(), want: ArchSet{Architectures: []string{"amd64", "arm", "arm64"}}},
		"one platform":         {ref: "oci/app@" + manifest.Manifests[1].Digest.String(), want: ArchSet{Architectures: []string{"arm64"}}},
		"single by tag":        {ref: "oci/app:single", want: ArchSet{Architectures: []string{"s390x"}}},
		"single by digest":     {ref: "oci/app@" + mustDigest(t, single).String(), want: ArchSet{Architectures: []string{"s390x"}}},
		"with a registry host": {ref: "localhost:5000/oci/app:v1", want: ArchSet{Architectures: []string{"amd64", "arm", "arm64"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := c.TrueArchitectures(tc.ref)
			if err != nil {
				t.Fatalf("TrueArchitectures(%s): %v", tc.ref, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TrueArchitectures(%s) (-want +got):\n%s", tc.ref, diff)
			}
		})
	}
	im, err := c.Image("oci/app:latest")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "latest"}, im.Tags); diff != "" {
		t.Errorf("tags of the index (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(layoutPlatforms, im.Platforms); diff != "" {
		t.Errorf("platforms of the index (-want +got):\n%s", diff)
	}
	if n := len(c.Images()); n != 3 {
		t.Errorf("catalog has %d images, want 3 (index, single, untagged)", n)
	}
}

// TestLayoutBlobsScopedToRepository checks that a layout's blobs are served from its repository
// only, and that its untagged image is pullable by digest.
func TestLayoutBlobsScopedToRepository(t *testing.T) {
	dir := t.TempDir()
	_, single := writeTestLayout(t, dir)
	spec := testSpec(t)
	spec.Layouts = []LayoutSpec{{Repository: "oci/app", Path: dir}}
	reg := startRegistry(t, Options{Catalog: mustCatalog(t, spec)})
	layers, err := single.Layers()
	if err != nil {
		t.Fatal(err)
	}
	blob := mustDigest(t, layers[0]).String()
	if r := do(t, reg, "GET", "/v2/oci/app/blobs/"+blob, nil, nil); r.status != 200 {
		t.Errorf("layer from oci/app = %d, want 200", r.status)
	}
	if r := do(t, reg, "GET", "/v2/team/app/api/blobs/"+blob, nil, nil); r.status != 404 {
		t.Errorf("layer from team/app/api = %d, want 404", r.status)
	}
	for _, im := range reg.Catalog().Images() {
		if im.Repository != "oci/app" || len(im.Tags) > 0 {
			continue
		}
		if r := do(t, reg, "GET", "/v2/oci/app/manifests/"+im.Digest, nil, nil); r.status != 200 {
			t.Errorf("untagged image by digest = %d, want 200", r.status)
		}
	}
}

// TestLayoutErrors checks that bad layouts are refused with the field and value named.
func TestLayoutErrors(t *testing.T) {
	good := t.TempDir()
	writeTestLayout(t, good)
	badTag := t.TempDir()
	p, err := layout.Write(badTag, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(platformImage(t, layoutPlatforms[0]),
		layout.WithAnnotations(map[string]string{RefNameAnnotation: "not a tag"})); err != nil {
		t.Fatal(err)
	}
	missingBlob := t.TempDir()
	_, single := writeTestLayout(t, missingBlob)
	layers, err := single.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(missingBlob, "blobs", "sha256", mustDigest(t, layers[0]).Hex)); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		layouts  []LayoutSpec
		wantPath string
		wantIn   string
	}{
		"no directory":       {layouts: []LayoutSpec{{Repository: "oci/app", Path: filepath.Join(good, "nope")}}, wantPath: "layouts[0].path", wantIn: "not an OCI image layout"},
		"empty path":         {layouts: []LayoutSpec{{Repository: "oci/app"}}, wantPath: "layouts[0].path", wantIn: "layout directory missing"},
		"bad repository":     {layouts: []LayoutSpec{{Repository: "OCI/App", Path: good}}, wantPath: "layouts[0].repository", wantIn: "invalid repository name"},
		"catalog repository": {layouts: []LayoutSpec{{Repository: "team/app/api", Path: good}}, wantPath: "layouts[0].repository", wantIn: "duplicate repository"},
		"twice":              {layouts: []LayoutSpec{{Repository: "oci/a", Path: good}, {Repository: "oci/a", Path: good}}, wantPath: "layouts[1].repository", wantIn: "duplicate repository, first at layouts[0]"},
		"bad ref.name":       {layouts: []LayoutSpec{{Repository: "oci/app", Path: badTag}}, wantPath: "layouts[0].path", wantIn: `"not a tag" does not name a valid tag`},
		"missing blob":       {layouts: []LayoutSpec{{Repository: "oci/app", Path: missingBlob}}, wantPath: "layouts[0].path", wantIn: "reading blob sha256:" + mustDigest(t, layers[0]).Hex},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := testSpec(t)
			spec.Layouts = tc.layouts
			_, err := NewCatalog(spec)
			errs := strictyaml.FieldErrors(err)
			if len(errs) != 1 {
				t.Fatalf("NewCatalog errors = %v, want one", err)
			}
			if errs[0].Path != tc.wantPath || !strings.Contains(errs[0].Error(), tc.wantIn) {
				t.Errorf("error %q at %s, want %q at %s", errs[0].Error(), errs[0].Path, tc.wantIn, tc.wantPath)
			}
		})
	}
}

// TestLayoutInCatalogFile loads a catalog file whose layout path is relative to the file, and one
// layout added as LoadCatalog's argument.
func TestLayoutInCatalogFile(t *testing.T) {
	dir := t.TempDir()
	writeTestLayout(t, filepath.Join(dir, "oci"))
	extra := t.TempDir()
	writeTestLayout(t, extra)
	file := filepath.Join(dir, "catalog.yaml")
	yaml := "layouts:\n  - repository: oci/app\n    path: oci\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCatalog(file, LayoutSpec{Repository: "oci/extra", Path: extra})
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	for _, ref := range []string{"oci/app:v1", "oci/extra:v1"} {
		if _, err := c.TrueArchitectures(ref); err != nil {
			t.Errorf("TrueArchitectures(%s): %v", ref, err)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("layouts:\n  - repository: oci/app\n    path: missing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadCatalog(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:3:") || !strings.Contains(err.Error(), "layouts[0].path") {
		t.Errorf("LoadCatalog(bad.yaml) = %v, want an error at line 3 naming the field", err)
	}
}
