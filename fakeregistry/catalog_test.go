package fakeregistry

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

func TestParseCatalogErrors(t *testing.T) {
	const file = "bad.yaml"
	tests := map[string]struct {
		yaml string
		want []strictyaml.FieldError
	}{
		"unknown field": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-index
    platfroms: [linux/amd64]
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].platfroms", Value: `["linux/amd64"]`, Reason: `unknown field (did you mean "platforms"?)`}},
		},
		"unknown field matched case-sensitively": {
			yaml: `
repositories:
- Name: a/b
  images: []
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].Name", Value: `"a/b"`, Reason: `unknown field (did you mean "name"?)`}},
		},
		"unknown format": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-idx
    platforms: [linux/amd64]
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].format", Value: `"oci-idx"`, Reason: unknownFormatReason()}},
		},
		"empty platform list": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-index
    platforms: []
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].platforms", Value: `[]`, Reason: "empty platform list"}},
		},
		"missing platform list": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-index
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].platforms", Value: `[]`, Reason: "empty platform list"}},
		},
		"duplicate tag": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1, latest]
    format: oci-manifest
    platforms: [linux/amd64]
  - tags: [latest]
    format: oci-manifest
    platforms: [linux/arm64]
`,
			want: []strictyaml.FieldError{{
				File: file, Path: "repositories[0].images[1].tags[0]", Value: `"latest"`,
				Reason: `duplicate tag in repository "a/b", first at repositories[0].images[0].tags[1]`,
			}},
		},
		"bad arch": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-index
    platforms: [linux/amd64, linux/amd65]
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].platforms[1]", Value: `"linux/amd65"`, Reason: `unknown architecture "amd65"`}},
		},
		"bad variant": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-index
    platforms: [linux/arm/v9]
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].platforms[0]", Value: `"linux/arm/v9"`, Reason: `unknown variant "v9" for architecture "arm"`}},
		},
		"single manifest with two platforms": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: docker-manifest
    platforms: [linux/amd64, linux/arm64]
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].platforms", Value: `["linux/amd64","linux/arm64"]`, Reason: "format docker-manifest takes exactly one platform"}},
		},
		"attestations on single manifest": {
			yaml: `
repositories:
- name: a/b
  images:
  - tags: [v1]
    format: oci-manifest
    platforms: [linux/amd64]
    attestations: true
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].images[0].attestations", Value: `true`, Reason: "attestations need a list format, not oci-manifest"}},
		},
		"duplicate repository from generator": {
			yaml: `
repositories:
- name: gen/x-0
  images:
  - format: oci-manifest
    platforms: [linux/amd64]
generate:
- count: 2
  prefix: gen/x
  archSets: [{platforms: [linux/amd64], weight: 1}]
  formats: [{format: oci-manifest, weight: 1}]
`,
			want: []strictyaml.FieldError{{File: file, Path: "generate[0].name", Value: `"gen/x-0"`, Reason: "duplicate repository, first at repositories[0]"}},
		},
		"generator that cannot place a multi-arch set": {
			yaml: `
generate:
- count: 2
  prefix: gen/x
  archSets: [{platforms: [linux/amd64, linux/arm64], weight: 1}]
  formats: [{format: oci-manifest, weight: 1}, {format: oci-index, weight: 0}]
`,
			want: []strictyaml.FieldError{{
				File: file, Path: "generate[0].archSets[0].platforms", Value: `["linux/amd64","linux/arm64"]`,
				Reason: "no format with weight > 0 in the mix can hold this many platforms",
			}},
		},
		"generator with broken mixes": {
			yaml: `
generate:
- count: 1
  prefix: gen/x
  archSets: []
  formats: [{format: zip, weight: -1}, {format: oci-manifest, weight: 0}]
`,
			want: []strictyaml.FieldError{
				{File: file, Path: "generate[0].formats[0].weight", Value: "-1", Reason: "weight must not be negative"},
				{File: file, Path: "generate[0].formats[0].format", Value: `"zip"`, Reason: unknownFormatReason()},
				{File: file, Path: "generate[0].formats", Value: `[{"format":"zip","weight":-1},{"format":"oci-manifest","weight":0}]`, Reason: "format weights sum to zero"},
				{File: file, Path: "generate[0].archSets", Value: "[]", Reason: "empty arch-set mix"},
			},
		},
		"generator with arch-set weights summing to zero": {
			yaml: `
generate:
- count: 1
  prefix: gen/x
  archSets: [{platforms: [linux/amd64], weight: -2}, {platforms: [linux/arm64], weight: 0}]
  formats: []
`,
			want: []strictyaml.FieldError{
				{File: file, Path: "generate[0].formats", Value: "[]", Reason: "empty format mix"},
				{File: file, Path: "generate[0].archSets[0].weight", Value: "-2", Reason: "weight must not be negative"},
				{File: file, Path: "generate[0].archSets", Value: `[{"platforms":["linux/amd64"],"weight":-2},{"platforms":["linux/arm64"],"weight":0}]`, Reason: "arch-set weights sum to zero"},
			},
		},
		"generator with unknown format": {
			yaml: `
generate:
- count: 1
  prefix: gen/x
  archSets: [{platforms: [linux/amd64], weight: 1}]
  formats: [{format: zip, weight: 1}]
`,
			want: []strictyaml.FieldError{{File: file, Path: "generate[0].formats[0].format", Value: `"zip"`, Reason: unknownFormatReason()}},
		},
		"wrong type": {
			yaml: `
generate:
- count: many
`,
			want: []strictyaml.FieldError{{File: file, Path: "generate[0].count", Value: `"many"`, Reason: "wrong type, want an integer"}},
		},
		"invalid repository name": {
			yaml: `
repositories:
- name: Team/App
  images:
  - format: oci-manifest
    platforms: [linux/amd64]
`,
			want: []strictyaml.FieldError{{File: file, Path: "repositories[0].name", Value: `"Team/App"`, Reason: "invalid repository name"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCatalog(file, []byte(tc.yaml))
			if err == nil {
				t.Fatal("ParseCatalog succeeded, want error")
			}
			var got []strictyaml.FieldError
			for _, fe := range strictyaml.FieldErrors(err) {
				got = append(got, *fe)
			}
			// Positions are checked in TestParseCatalogPositions.
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(strictyaml.FieldError{}, "Line", "Column")); diff != "" {
				t.Errorf("field errors (-want +got):\n%s\nerror: %v", diff, err)
			}
			// The message itself names file, field path and value.
			msg := err.Error()
			for _, w := range tc.want {
				for _, part := range []string{w.File, w.Path, w.Value} {
					if !strings.Contains(msg, part) {
						t.Errorf("error %q does not contain %q", msg, part)
					}
				}
			}
		})
	}
}

// TestParseCatalogPositions checks that errors carry line, column and list indices, and that
// scalars YAML reads as numbers or booleans are refused as tags with a hint to quote them.
func TestParseCatalogPositions(t *testing.T) {
	const doc = `repositories:
- name: a/ok
  images:
  - {tags: [v1], format: oci-manifest, platforms: [linux/amd64]}
- name: a/b
  images:
  - tags: [v1]
    format: oci-manifest
    platforms: [linux/amd64]
  - format: oci-manifest
    platforms: [linux/arm64]
    tags: [ok, 3.10, 010, 1e3, true]
- name: a/c
  images:
  - format: oci-index
    platforms: [linux/amd64, linux/sparc]
`
	_, err := ParseCatalog("c.yaml", []byte(doc))
	var got []string
	for _, fe := range strictyaml.FieldErrors(err) {
		got = append(got, fe.Error())
	}
	want := []string{
		`c.yaml:12:16: repositories[1].images[1].tags[1]: wrong type, want a string: YAML reads 3.10 as a float; quote it: "3.10" (value 3.10)`,
		`c.yaml:12:22: repositories[1].images[1].tags[2]: wrong type, want a string: YAML reads 010 as an integer; quote it: "010" (value 010)`,
		`c.yaml:12:27: repositories[1].images[1].tags[3]: wrong type, want a string: YAML reads 1e3 as a float; quote it: "1e3" (value 1e3)`,
		`c.yaml:12:32: repositories[1].images[1].tags[4]: wrong type, want a string: YAML reads true as a boolean; quote it: "true" (value true)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("type errors (-want +got):\n%s", diff)
	}
	fixed := strings.Replace(doc, "[ok, 3.10, 010, 1e3, true]", `[ok, "3.10"]`, 1)
	_, err = ParseCatalog("c.yaml", []byte(fixed))
	got = nil
	for _, fe := range strictyaml.FieldErrors(err) {
		got = append(got, fe.Error())
	}
	want = []string{`c.yaml:16:30: repositories[2].images[0].platforms[1]: unknown architecture "sparc" (value "linux/sparc")`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("validation errors (-want +got):\n%s", diff)
	}
}

func TestParseCatalogInvalidYAML(t *testing.T) {
	tests := map[string]struct {
		yaml     string
		wantText string
	}{
		"syntax":        {yaml: "repositories: [\n", wantText: "line 1"},
		"duplicate key": {yaml: "repositories: []\nrepositories: []\n", wantText: `"repositories" already set`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCatalog("broken.yaml", []byte(tc.yaml))
			if err == nil || !strings.HasPrefix(err.Error(), "broken.yaml:") || !strings.Contains(err.Error(), "invalid YAML") ||
				!strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error = %v, want one starting with the file name and invalid YAML, containing %q", err, tc.wantText)
			}
		})
	}
}

func TestLoadSampleCatalog(t *testing.T) {
	c, err := LoadCatalog("testdata/catalog.yaml")
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	if got, want := len(c.Images()), 5+20; got != want {
		t.Errorf("images = %d, want %d", got, want)
	}
}

func TestTrueArchitectures(t *testing.T) {
	c, err := LoadCatalog("testdata/catalog.yaml")
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	multi, err := c.Image("library/multi:latest")
	if err != nil {
		t.Fatalf("Image: %v", err)
	}
	arm64Child := childDigest(t, c, "library/multi", "arm64")
	all4 := ArchSet{Architectures: []string{"amd64", "arm64", "ppc64le", "s390x"}}
	tests := map[string]struct {
		ref     string
		want    ArchSet
		wantErr error
	}{
		"tag":                       {ref: "library/multi:latest", want: all4},
		"second tag":                {ref: "library/multi:1.0", want: all4},
		"registry with port":        {ref: "127.0.0.1:5000/library/multi:1.0", want: all4},
		"hostname registry":         {ref: "registry.example/library/multi", want: all4},
		"docker transport prefix":   {ref: "docker://localhost:5000/library/multi", want: all4},
		"digest":                    {ref: "library/multi@" + multi.Digest, want: all4},
		"tag and digest":            {ref: "127.0.0.1:5000/library/multi:nosuchtag@" + multi.Digest, want: all4},
		"per-platform digest":       {ref: "library/multi@" + arm64Child, want: ArchSet{Architectures: []string{"arm64"}}},
		"windows and arm variant":   {ref: "team/dockerlist:v2", want: ArchSet{Architectures: []string{"amd64", "arm"}}},
		"deep path single manifest": {ref: "team/app/api:v1", want: ArchSet{Architectures: []string{"arm64"}}},
		"docker schema2":            {ref: "legacy/tool:3.1", want: ArchSet{Architectures: []string{"amd64"}}},
		"no binaries":               {ref: "operators/bundle:v0.1.0", want: ArchSet{NoBinaries: true, Architectures: []string{"amd64"}}},
		"unknown tag":               {ref: "library/multi:2.0", wantErr: ErrUnknownReference},
		"short name is not library": {ref: "multi:latest", wantErr: ErrUnknownReference},
		"unknown digest":            {ref: "library/multi@sha256:" + strings.Repeat("0", 64), wantErr: ErrUnknownReference},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := c.TrueArchitectures(tc.ref)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("arch set (-want +got):\n%s", diff)
			}
		})
	}
	if s, _ := c.TrueArchitectures("operators/bundle:v0.1.0"); !s.Allows("s390x") {
		t.Errorf("bundle image does not allow s390x, want any architecture")
	}
}

// childDigest returns the digest of the per-platform manifest of arch in repo's single list image.
func childDigest(t *testing.T, c *Catalog, repo, arch string) string {
	t.Helper()
	for key, s := range c.byDigest {
		r, d, _ := strings.Cut(key, "@")
		if r == repo && len(s.Architectures) == 1 && s.Architectures[0] == arch {
			return d
		}
	}
	t.Fatalf("no %s manifest in %s", arch, repo)
	return ""
}

func TestCatalogDeterministic(t *testing.T) {
	spec := CatalogSpec{
		Repositories: []RepositorySpec{{Name: "a/b", Images: []ImageSpec{{
			Tags: []string{"v1"}, Format: FormatOCIIndex, Platforms: []string{"linux/amd64", "linux/arm64"}, Attestations: true,
		}}}},
		Generate: []GenerateSpec{sampleGenerateSpec(7, 50)},
	}
	first, err := NewCatalog(spec)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	second, err := NewCatalog(spec)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	if diff := cmp.Diff(first.Images(), second.Images()); diff != "" {
		t.Errorf("same spec built different images (-first +second):\n%s", diff)
	}
	spec.Generate[0].Seed = 8
	other, err := NewCatalog(spec)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	if cmp.Equal(first.Images(), other.Images()) {
		t.Errorf("different generator seeds built identical catalogs")
	}
}

func TestImagesHaveDistinctDigests(t *testing.T) {
	c, err := LoadCatalog("testdata/catalog.yaml")
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	seen := map[string]string{}
	for _, im := range c.Images() {
		if prev, ok := seen[im.Digest]; ok {
			t.Errorf("%s and %s share digest %s", prev, im.Repository, im.Digest)
		}
		seen[im.Digest] = im.Repository
	}
}
