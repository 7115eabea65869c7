// Package workload turns a scenario into the pods to create: which images
// each pod runs, which pods pin their own architecture or carry pull
// secrets, and where each pod may truly run (the ground truth, from the
// catalog). It is deterministic: the same scenario and seed give the same
// plan, so a baseline pass and the main pass create the same pods.
package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Pod is one planned pod.
type Pod struct {
	// Index numbers the pod within a pass (0-based); it names the pod.
	Index int
	// Namespace is the index of the pod's namespace.
	Namespace int
	// Containers and InitContainers are image references without the
	// registry host: repository:tag or repository@digest.
	Containers     []string
	InitContainers []string
	// Allowed are the architectures every image of the pod runs on, sorted;
	// nil with AnyArch means every architecture.
	Allowed []string
	// AnyArch is true when no image of the pod carries binaries.
	AnyArch bool
	// Platforms are the "os/arch" platforms every image of the pod runs on,
	// every operating system, sorted; nil with AnyArch.
	Platforms []string
	// ArchAffinity is the architecture of the pod's own required node
	// affinity, or empty.
	ArchAffinity string
	// NodeSelectorArch is the architecture the pod pins with a nodeSelector,
	// or empty.
	NodeSelectorArch string
	// PullSecret is true when the pod lists the registry pull secret.
	PullSecret bool
	// NoFeasibleArch is true when the pod's images share no architecture
	// with any node pool: with the operator it stays Pending by design.
	NoFeasibleArch bool
	// Attack says where the images of an attacker's pod are; empty for the
	// workload's pods. Nothing is known of an attack pod's architectures:
	// it may run anywhere (AnyArch), and no misplacement is counted for it.
	Attack scenario.AttackImages
	// AnnotationBytes is the size of a padding annotation the pod carries.
	AnnotationBytes int
}

// Runs reports whether the pod's images all run on a linux node of arch.
func (p Pod) Runs(arch string) bool { return p.AnyArch || slices.Contains(p.Allowed, arch) }

// RunsOn reports whether the pod's images all run on a node of platform ("os/arch"). Without
// Platforms the pod runs on the linux nodes of Allowed.
func (p Pod) RunsOn(platform string) bool {
	if p.AnyArch {
		return true
	}
	if p.Platforms == nil {
		os, arch, _ := strings.Cut(platform, "/")
		return os == "linux" && slices.Contains(p.Allowed, arch)
	}
	return slices.Contains(p.Platforms, platform)
}

// Images returns the pod's unique image references, init containers first.
func (p Pod) Images() []string {
	var out []string
	for _, r := range append(slices.Clone(p.InitContainers), p.Containers...) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Plan is the workload of one pass.
type Plan struct {
	// Pods are the pods, by index.
	Pods []Pod
	// UniqueImages are the distinct image references the pods use.
	UniqueImages []string
	// Schedulable counts pods that share an architecture with some node
	// pool: with the operator, the others are expected to stay Pending.
	Schedulable int
	// Attack are the attacker's pods (scenario.AttackerSpec), indexed after
	// Pods; nil without an attacker.
	Attack []Pod
}

// Attack repositories: the tarpit's (on the registry) and the hanging
// host's.
const (
	TarpitRepository = "attack/tarpit"
	HangRepository   = "attack/hang"
)

// maxRedraws bounds the draws for an image compatible with the pod so far.
const maxRedraws = 20

// Generate plans the pods of a scenario over its catalog.
func Generate(s *scenario.Scenario, c *fakeregistry.Catalog) Plan {
	w := s.Workload
	rng := rand.New(rand.NewPCG(s.Seed, 0x5851f42d4c957f2d))
	images := c.Images()
	nodePlatforms := scenario.NodePlatforms(s)
	pick := newPicker(w.Images, images, nodePlatforms, rng)
	var plan Plan
	seen := map[string]bool{}
	for i := range w.Pods {
		p := Pod{Index: i, Namespace: i % w.Namespaces, AnyArch: true}
		nInit := between(rng, w.InitContainers.Min, w.InitContainers.Max)
		nMain := between(rng, w.Containers.Min, w.Containers.Max)
		var chosen []fakeregistry.Image
		for range nInit + nMain {
			im := pick.next(chosen, !w.Images.AllowIncompatible)
			chosen = append(chosen, im)
		}
		for j, im := range chosen {
			ref := reference(rng, im, w.Images.DigestShare)
			if j < nInit {
				p.InitContainers = append(p.InitContainers, ref)
			} else {
				p.Containers = append(p.Containers, ref)
			}
			if !seen[ref] {
				seen[ref] = true
				plan.UniqueImages = append(plan.UniqueImages, ref)
			}
		}
		p.Platforms, p.AnyArch = intersectPlatforms(chosen)
		p.Allowed = linuxArchitectures(p.Platforms, p.AnyArch)
		feasible := feasibleArchs(p, nodePlatforms)
		if len(feasible) > 0 {
			plan.Schedulable++
		} else {
			p.NoFeasibleArch = true
		}
		u := rng.Float64()
		switch {
		case len(feasible) == 0:
		case u < w.OwnArchAffinityShare:
			p.ArchAffinity = feasible[rng.IntN(len(feasible))]
		case u < w.OwnArchAffinityShare+w.NodeSelectorShare:
			p.NodeSelectorArch = feasible[rng.IntN(len(feasible))]
		}
		p.PullSecret = rng.Float64() < w.PullSecretShare
		plan.Pods = append(plan.Pods, p)
	}
	if s.Attacker != nil {
		plan.Attack = attack(s, images, len(plan.Pods))
	}
	return plan
}

// attack plans the attacker's pods, indexed from first, from a random
// stream of their own so that the workload's pods do not depend on them.
func attack(s *scenario.Scenario, images []fakeregistry.Image, first int) []Pod {
	a := s.Attacker
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	var total float64
	for _, at := range a.Attacks {
		total += at.Weight
	}
	out := make([]Pod, 0, a.Pods)
	for k := range a.Pods {
		i := first + k
		at := a.Attacks[len(a.Attacks)-1]
		for u, j := rng.Float64()*total, 0; j < len(a.Attacks); j++ {
			if u -= a.Attacks[j].Weight; u < 0 {
				at = a.Attacks[j]
				break
			}
		}
		p := Pod{Index: i, Namespace: s.Workload.Namespaces, AnyArch: true, Attack: at.Images, AnnotationBytes: at.AnnotationBytes}
		for c := range at.Containers {
			p.Containers = append(p.Containers, attackReference(rng, at.Images, images, i, c))
		}
		out = append(out, p)
	}
	return out
}

// attackReference is the image of container c of attack pod i: a tag of its
// own except for catalog images, so that no cache answers for it.
func attackReference(rng *rand.Rand, kind scenario.AttackImages, images []fakeregistry.Image, i, c int) string {
	tag := fmt.Sprintf("p%d-c%d", i, c)
	switch kind {
	case scenario.AttackImagesTarpit:
		return TarpitRepository + ":" + tag
	case scenario.AttackImagesHang:
		return HangRepository + ":" + tag
	case scenario.AttackImagesMissing:
		return images[rng.IntN(len(images))].Repository + ":missing-" + tag
	default:
		return reference(rng, images[rng.IntN(len(images))], 0)
	}
}

// between draws uniformly from [lo, hi].
func between(rng *rand.Rand, lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + rng.IntN(hi-lo+1)
}

// reference names the image by tag, or by digest for a digestShare of draws
// (and always for images without tags).
func reference(rng *rand.Rand, im fakeregistry.Image, digestShare float64) string {
	if len(im.Tags) == 0 || (digestShare > 0 && rng.Float64() < digestShare) {
		return im.Repository + "@" + im.Digest
	}
	return im.Repository + ":" + im.Tags[0]
}

// intersectPlatforms returns the platforms every image with binaries runs on
// (nil and anyPlatform when none has binaries).
func intersectPlatforms(images []fakeregistry.Image) (platforms []string, anyPlatform bool) {
	anyPlatform = true
	for _, im := range images {
		if im.Arches.NoBinaries {
			continue
		}
		if anyPlatform {
			platforms, anyPlatform = scenario.ImagePlatforms(im), false
			continue
		}
		own := scenario.ImagePlatforms(im)
		platforms = slices.DeleteFunc(platforms, func(p string) bool { return !slices.Contains(own, p) })
	}
	return platforms, anyPlatform
}

// linuxArchitectures returns the architectures of the linux platforms, sorted
// (the catalog's ArchSet of the images together); nil when the images run
// anywhere.
func linuxArchitectures(platforms []string, anyPlatform bool) []string {
	if anyPlatform {
		return nil
	}
	out := []string{}
	for _, pl := range platforms {
		if arch, ok := strings.CutPrefix(pl, "linux/"); ok {
			out = append(out, arch)
		}
	}
	return out
}

// feasibleArchs returns the architectures of the node platforms the pod's
// images run on.
func feasibleArchs(p Pod, nodePlatforms []string) []string {
	var out []string
	for _, pl := range nodePlatforms {
		_, arch, _ := strings.Cut(pl, "/")
		if p.RunsOn(pl) && !slices.Contains(out, arch) {
			out = append(out, arch)
		}
	}
	return out
}

// picker draws images by popularity.
type picker struct {
	spec          scenario.ImageChoiceSpec
	images        []fakeregistry.Image
	nodePlatforms []string
	rng           *rand.Rand
	zipf          *rand.Zipf
	nextIdx       int
}

func newPicker(spec scenario.ImageChoiceSpec, images []fakeregistry.Image, nodePlatforms []string, rng *rand.Rand) *picker {
	p := &picker{spec: spec, images: images, nodePlatforms: nodePlatforms, rng: rng}
	if spec.Popularity == scenario.PopularityZipf && len(images) > 1 {
		p.zipf = rand.NewZipf(rng, spec.ZipfS, 1, uint64(len(images)-1))
	}
	return p
}

// draw returns one image by popularity.
func (p *picker) draw() fakeregistry.Image {
	switch {
	case p.spec.Popularity == scenario.PopularityUnique:
		im := p.images[p.nextIdx%len(p.images)]
		p.nextIdx++
		return im
	case p.zipf != nil:
		return p.images[p.zipf.Uint64()]
	default:
		return p.images[p.rng.IntN(len(p.images))]
	}
}

// next draws an image for a pod that already has chosen. With compatible,
// it redraws until the pod's images still share a node architecture; after
// maxRedraws (or, for unique popularity, a full turn of the catalog) it
// reuses the pod's first image.
func (p *picker) next(chosen []fakeregistry.Image, compatible bool) fakeregistry.Image {
	tries := maxRedraws
	if p.spec.Popularity == scenario.PopularityUnique {
		tries = len(p.images)
	}
	for range tries {
		im := p.draw()
		if !compatible || p.fits(append(slices.Clone(chosen), im)) {
			return im
		}
	}
	if len(chosen) > 0 {
		return chosen[0]
	}
	return p.draw()
}

// fits reports whether the images share a platform of the node pools.
func (p *picker) fits(images []fakeregistry.Image) bool {
	platforms, anyPlatform := intersectPlatforms(images)
	if anyPlatform {
		return true
	}
	return slices.ContainsFunc(p.nodePlatforms, func(pl string) bool { return slices.Contains(platforms, pl) })
}
