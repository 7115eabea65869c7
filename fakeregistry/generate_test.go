package fakeregistry

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sampleGenerateSpec returns a mix of three arch sets and all four formats.
func sampleGenerateSpec(seed uint64, count int) GenerateSpec {
	return GenerateSpec{
		Seed:   seed,
		Count:  count,
		Prefix: "gen/app",
		ArchSets: []WeightedArchSet{
			{Platforms: []string{"linux/amd64"}, Weight: 6},
			{Platforms: []string{"linux/amd64", "linux/arm64"}, Weight: 3},
			{Platforms: []string{"linux/amd64"}, Weight: 1, NoBinaries: true},
		},
		Formats: []WeightedFormat{
			{Format: FormatOCIIndex, Weight: 1},
			{Format: FormatDockerManifestList, Weight: 1},
			{Format: FormatOCIManifest, Weight: 1},
			{Format: FormatDockerManifest, Weight: 1},
		},
		Attestations: 0.5,
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, err := Generate(sampleGenerateSpec(1, 100))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	b, err := Generate(sampleGenerateSpec(1, 100))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed generated different repositories (-a +b):\n%s", diff)
	}
	c, err := Generate(sampleGenerateSpec(2, 100))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if cmp.Equal(a, c) {
		t.Errorf("different seeds generated identical repositories")
	}
}

func TestGenerateMix(t *testing.T) {
	const n = 2000
	repos, err := Generate(sampleGenerateSpec(3, n))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(repos) != n {
		t.Fatalf("generated %d repositories, want %d", len(repos), n)
	}
	if got, want := repos[0].Name, "gen/app-0000"; got != want {
		t.Errorf("first name = %q, want %q", got, want)
	}
	archSets := map[string]int{}
	formats := map[Format]int{}
	for _, r := range repos {
		im := r.Images[0]
		key := fmt.Sprint(im.Platforms)
		if im.NoBinaries {
			key += " bundle"
		}
		archSets[key]++
		formats[im.Format]++
		if len(im.Platforms) > 1 && !im.Format.IsList() {
			t.Errorf("%s: %d platforms in single-manifest format %s", r.Name, len(im.Platforms), im.Format)
		}
		if im.Attestations && !im.Format.IsList() {
			t.Errorf("%s: attestations in single-manifest format %s", r.Name, im.Format)
		}
	}
	// Loose bounds around the weights (60/30/10 %); the draw is fixed by the seed, so this never flakes.
	within := func(name string, got, want int) {
		if got < want*8/10 || got > want*12/10 {
			t.Errorf("%s: %d images, want about %d", name, got, want)
		}
	}
	within("amd64", archSets["[linux/amd64]"], n*6/10)
	within("amd64+arm64", archSets["[linux/amd64 linux/arm64]"], n*3/10)
	within("bundle", archSets["[linux/amd64] bundle"], n/10)
	for _, f := range Formats() {
		if formats[f] == 0 {
			t.Errorf("format %s never drawn", f)
		}
	}
}
