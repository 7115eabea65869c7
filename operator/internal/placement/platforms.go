/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package placement

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// PlatformsByOS returns, per operating system (kubernetes.io/os value), the architectures every
// image supports on it: the intersection of the images' "os/arch" pairs, grouped by operating
// system. Images without binaries do not narrow it; anyPlatform reports that every image is such
// an image (or that there are none), in which case byOS is nil. An image whose pairs were not
// recorded (nil Platforms) counts as linux on its Architectures. An empty, non-nil byOS means
// the images share no platform.
func PlatformsByOS(images []ImageArchitectures) (byOS map[string]sets.Set[string], anyPlatform bool) {
	var common sets.Set[string]
	for _, img := range images {
		if img.AnyArchitecture {
			continue
		}
		pairs := img.Platforms
		if pairs == nil {
			for _, a := range img.Architectures {
				pairs = append(pairs, "linux/"+a)
			}
		}
		if s := sets.New(pairs...); common == nil {
			common = s
		} else {
			common = common.Intersection(s)
		}
	}
	if common == nil {
		return nil, true
	}
	byOS = map[string]sets.Set[string]{}
	for pair := range common {
		os, arch, ok := strings.Cut(pair, "/")
		if !ok || os == "" || arch == "" {
			continue
		}
		if byOS[os] == nil {
			byOS[os] = sets.New[string]()
		}
		byOS[os].Insert(arch)
	}
	return byOS, false
}

// ArchitecturesOf returns the architectures of byOS, every operating system together.
func ArchitecturesOf(byOS map[string]sets.Set[string]) sets.Set[string] {
	out := sets.New[string]()
	for _, archs := range byOS {
		out = out.Union(archs)
	}
	return out
}

// NarrowPlatforms keeps, of byOS, the architectures in archs and the operating system the pod's
// nodeSelector names (kubernetes.io/os), if any; operating systems left with no architecture
// are dropped. byOS is not changed.
func NarrowPlatforms(spec *corev1.PodSpec, byOS map[string]sets.Set[string], archs sets.Set[string]) map[string]sets.Set[string] {
	pinned, osPinned := spec.NodeSelector[v1beta1.NodeOSLabel]
	out := map[string]sets.Set[string]{}
	for os, a := range byOS {
		if osPinned && os != pinned {
			continue
		}
		if kept := a.Intersection(archs); kept.Len() > 0 {
			out[os] = kept
		}
	}
	return out
}

// MergeRequiredPlatforms is MergeRequiredArchitectures for operating-system placement: every
// required node selector term that selects nodes and has no kubernetes.io/os requirement is
// replaced by one copy per operating system of byOS (sorted), each with "kubernetes.io/os In
// [os]" and, unless the term or the nodeSelector already constrains the architecture,
// "kubernetes.io/arch In [the architectures on that os]". Terms are ORed, so the pod may run on
// any pair the images share and on no other. A term with the user's own kubernetes.io/os
// requirement keeps it and gets the architectures of every operating system, as without
// operating-system placement. Without required terms, one term per operating system is set.
//
// It returns OutcomeNoCommonArch, changing nothing, when byOS is empty; OutcomeUserPinned when
// the user's constraints decide the architecture (the operating system may still have been
// added); OutcomeArchSet otherwise. As MergeRequiredArchitectures, it never writes memory
// reachable from the old spec.Affinity.
func MergeRequiredPlatforms(spec *corev1.PodSpec, byOS map[string]sets.Set[string]) Outcome {
	if len(byOS) == 0 {
		return OutcomeNoCommonArch
	}
	archPinned, selectorArch := UserPinsArchitecture(spec), NodeSelectorPinsArchitecture(spec)
	terms := requiredTerms(spec)
	fresh := len(terms) == 0
	if fresh {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	var out []corev1.NodeSelectorTerm
	for _, t := range terms {
		out = append(out, platformTerms(t, byOS, selectorArch, fresh)...)
	}
	affinity := copyNodeAffinity(spec)
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: out}
	spec.Affinity = affinity
	if archPinned {
		return OutcomeUserPinned
	}
	return OutcomeArchSet
}

// platformTerms returns what term t becomes (fresh: t stands for "no required terms").
func platformTerms(t corev1.NodeSelectorTerm, byOS map[string]sets.Set[string], selectorArch, fresh bool) []corev1.NodeSelectorTerm {
	if !fresh && len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return []corev1.NodeSelectorTerm{*t.DeepCopy()} // matches no node: a requirement would widen it
	}
	addArch := !selectorArch && !slices.ContainsFunc(t.MatchExpressions, isArchitectureRequirement)
	if slices.ContainsFunc(t.MatchExpressions, isOSRequirement) {
		c := t.DeepCopy()
		if addArch {
			c.MatchExpressions = append(c.MatchExpressions, ArchitectureRequirement(ArchitecturesOf(byOS)))
		}
		return []corev1.NodeSelectorTerm{*c}
	}
	var out []corev1.NodeSelectorTerm
	for _, os := range slices.Sorted(maps.Keys(byOS)) {
		c := t.DeepCopy()
		c.MatchExpressions = append(c.MatchExpressions,
			corev1.NodeSelectorRequirement{Key: v1beta1.NodeOSLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{os}})
		if addArch {
			c.MatchExpressions = append(c.MatchExpressions, ArchitectureRequirement(byOS[os]))
		}
		out = append(out, *c)
	}
	return out
}

func isOSRequirement(r corev1.NodeSelectorRequirement) bool {
	return r.Key == v1beta1.NodeOSLabel
}
