package fakeregistry

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// GenerateSpec describes a batch of generated images, one repository each, drawn deterministically
// from Seed: the same spec always yields the same repositories and so the same digests.
type GenerateSpec struct {
	// Seed drives every random choice of the batch.
	Seed uint64 `json:"seed"`
	// Count is the number of images (and repositories) to generate.
	Count int `json:"count"`
	// Prefix names the repositories: <prefix>-<index>, the index zero-padded to the width of Count-1.
	Prefix string `json:"prefix"`
	// Tag is the tag of every generated image; default latest.
	Tag string `json:"tag,omitempty"`
	// ArchSets is the weighted mix of platform sets.
	ArchSets []WeightedArchSet `json:"archSets"`
	// Formats is the weighted mix of formats. Single-manifest formats are drawn only for one-platform
	// arch sets; multi-platform arch sets draw among the list formats.
	Formats []WeightedFormat `json:"formats"`
	// Attestations is the fraction (0..1) of list images that get buildx attestation entries.
	Attestations float64 `json:"attestations,omitempty"`
}

// WeightedArchSet is one platform set of a generator's mix.
type WeightedArchSet struct {
	// Platforms are os/architecture[/variant] strings.
	Platforms []string `json:"platforms"`
	// Weight is the relative frequency of this set.
	Weight int `json:"weight"`
	// NoBinaries marks the generated images of this set as operator-bundle style (runs anywhere).
	NoBinaries bool `json:"noBinaries,omitempty"`
}

// WeightedFormat is one format of a generator's mix.
type WeightedFormat struct {
	// Format is the image format.
	Format Format `json:"format"`
	// Weight is the relative frequency of this format.
	Weight int `json:"weight"`
}

// Generate validates spec and returns its repositories; errors are strictyaml.FieldErrors with paths into spec.
func Generate(spec GenerateSpec) ([]RepositorySpec, error) {
	if errs := validateGenerate("", spec); len(errs) > 0 {
		return nil, strictyaml.Join("", errs)
	}
	return generate(spec), nil
}

// generate draws the repositories of a valid spec.
func generate(spec GenerateSpec) []RepositorySpec {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6a09e667f3bcc909))
	tag := spec.Tag
	if tag == "" {
		tag = "latest"
	}
	width := len(strconv.Itoa(max(spec.Count-1, 0)))
	repos := make([]RepositorySpec, 0, spec.Count)
	for i := range spec.Count {
		set := spec.ArchSets[pickWeighted(rng, len(spec.ArchSets), func(j int) int { return spec.ArchSets[j].Weight })]
		formats := compatibleFormats(spec.Formats, len(set.Platforms))
		f := formats[pickWeighted(rng, len(formats), func(j int) int { return formats[j].Weight })].Format
		im := ImageSpec{
			Tags:       []string{tag},
			Format:     f,
			Platforms:  append([]string(nil), set.Platforms...),
			NoBinaries: set.NoBinaries,
		}
		// Always draw, so one image's format does not shift the sequence of the next.
		if rng.Float64() < spec.Attestations && f.IsList() {
			im.Attestations = true
		}
		repos = append(repos, RepositorySpec{
			Name:   fmt.Sprintf("%s-%0*d", spec.Prefix, width, i),
			Images: []ImageSpec{im},
		})
	}
	return repos
}

// compatibleFormats filters a format mix to those that can hold n platforms.
func compatibleFormats(formats []WeightedFormat, n int) []WeightedFormat {
	var out []WeightedFormat
	for _, f := range formats {
		if f.Weight > 0 && (n == 1 || f.Format.IsList()) {
			out = append(out, f)
		}
	}
	return out
}

// pickWeighted draws an index in [0,n) with probability proportional to weight(i); weights sum > 0.
func pickWeighted(rng *rand.Rand, n int, weight func(int) int) int {
	total := 0
	for i := range n {
		total += weight(i)
	}
	x := rng.IntN(total)
	for i := range n {
		x -= weight(i)
		if x < 0 {
			return i
		}
	}
	return n - 1
}

// validateGenerate checks a generator spec at path.
func validateGenerate(path string, g GenerateSpec) []*strictyaml.FieldError {
	var errs []*strictyaml.FieldError
	if g.Count < 1 {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "count"), g.Count, "count must be at least 1"))
	}
	if !repoNameRE.MatchString(g.Prefix) {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "prefix"), g.Prefix, "invalid repository name prefix"))
	}
	if g.Tag != "" && !tagRE.MatchString(g.Tag) {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "tag"), g.Tag, "invalid tag"))
	}
	if g.Attestations < 0 || g.Attestations > 1 {
		errs = append(errs, strictyaml.Field(strictyaml.JoinPath(path, "attestations"), g.Attestations, "fraction must be within [0, 1]"))
	}
	formatErrs, formatTotal := validateMix(strictyaml.JoinPath(path, "formats"), "format", g.Formats,
		func(f WeightedFormat) int { return f.Weight },
		func(p string, f WeightedFormat) []*strictyaml.FieldError {
			if !slices.Contains(Formats(), f.Format) {
				return []*strictyaml.FieldError{strictyaml.Field(strictyaml.JoinPath(p, "format"), f.Format, unknownFormatReason())}
			}
			return nil
		})
	errs = append(errs, formatErrs...)
	// Only judge compatibility once the format mix itself is valid, to avoid a follow-on error.
	formatsValid := len(validFormats(g.Formats)) == len(g.Formats) && formatTotal > 0
	archErrs, _ := validateMix(strictyaml.JoinPath(path, "archSets"), "arch-set", g.ArchSets,
		func(s WeightedArchSet) int { return s.Weight },
		func(p string, s WeightedArchSet) []*strictyaml.FieldError {
			errs := validatePlatforms(strictyaml.JoinPath(p, "platforms"), s.Platforms)
			if formatsValid && s.Weight > 0 && len(s.Platforms) > 0 && len(compatibleFormats(g.Formats, len(s.Platforms))) == 0 {
				errs = append(errs, strictyaml.Field(strictyaml.JoinPath(p, "platforms"), s.Platforms,
					"no format with weight > 0 in the mix can hold this many platforms"))
			}
			return errs
		})
	errs = append(errs, archErrs...)
	return errs
}

// validateMix checks a weighted mix at path: not empty, no weight negative, weights not summing
// to zero; item adds an entry's own checks at its path, after its weight's. It returns the errors
// and the sum of the weights that are not negative.
func validateMix[T any](path, what string, mix []T, weight func(T) int,
	item func(p string, x T) []*strictyaml.FieldError) ([]*strictyaml.FieldError, int) {
	var errs []*strictyaml.FieldError
	if len(mix) == 0 {
		errs = append(errs, strictyaml.Field(path, []T{}, "empty "+what+" mix"))
	}
	total := 0
	for i, x := range mix {
		p := strictyaml.IndexPath(path, i)
		w := weight(x)
		if w < 0 {
			errs = append(errs, strictyaml.Field(strictyaml.JoinPath(p, "weight"), w, "weight must not be negative"))
		}
		total += max(w, 0)
		errs = append(errs, item(p, x)...)
	}
	if len(mix) > 0 && total == 0 {
		errs = append(errs, strictyaml.Field(path, mix, what+" weights sum to zero"))
	}
	return errs, total
}

// validFormats drops unknown formats from a mix.
func validFormats(formats []WeightedFormat) []WeightedFormat {
	var out []WeightedFormat
	for _, f := range formats {
		if slices.Contains(Formats(), f.Format) {
			out = append(out, f)
		}
	}
	return out
}
