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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// AnnotationValueAnyArchitecture is the value of the architectures annotation for a pod whose
// images all run on any architecture (they carry no binaries).
const AnnotationValueAnyArchitecture = "*"

// PodImages returns the unique image references of the pod's containers and init containers,
// sorted, without empty ones. Ephemeral containers are left out: they cannot exist when a pod is
// created (they are added later through the ephemeralcontainers subresource) and do not take
// part in scheduling.
func PodImages(spec *corev1.PodSpec) []string {
	images := sets.New[string]()
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			if img := ContainerImage(c); img != "" {
				images.Insert(img)
			}
		}
	}
	return sets.List(images)
}

// ContainerImage is the image reference of c as placement inspects it (surrounding white space
// trimmed, as the kubelet does); "" when the container names no image.
func ContainerImage(c corev1.Container) string { return strings.TrimSpace(c.Image) }

// ImageArchitectures is what inspection found for one image.
type ImageArchitectures struct {
	// Architectures are the kubernetes.io/arch values the image runs on.
	Architectures []string
	// Platforms are the "os/arch" pairs the image runs on, every operating system, for
	// operating-system placement (PlatformsByOS); nil when not recorded.
	Platforms []string
	// AnyArchitecture is set for images without binaries: they run anywhere.
	AnyArchitecture bool
}

// Intersect returns the architectures every image supports. Images without binaries run anywhere
// and do not narrow the set; anyArch reports that every image is such an image (or that there are
// none), in which case archs is nil. An empty, non-nil archs means the images share no
// architecture.
func Intersect(images []ImageArchitectures) (archs sets.Set[string], anyArch bool) {
	for _, img := range images {
		if img.AnyArchitecture {
			continue
		}
		s := sets.New(img.Architectures...)
		if archs == nil {
			archs = s
		} else {
			archs = archs.Intersection(s)
		}
	}
	return archs, archs == nil
}

// ArchitecturesAnnotation is the value of the architectures annotation: the sorted set joined by
// commas, AnnotationValueAnyArchitecture when every image runs anywhere, "" when the images share
// no architecture.
func ArchitecturesAnnotation(archs sets.Set[string], anyArch bool) string {
	if anyArch {
		return AnnotationValueAnyArchitecture
	}
	return strings.Join(sets.List(archs), ",")
}

// Annotations returns the annotations that record the decision on the pod.
func (d Decision) Annotations() map[string]string {
	a := map[string]string{v1beta1.AnnotationArchitectures: d.Architectures}
	if d.PreferenceSource != "" {
		a[v1beta1.AnnotationPreferredAffinitySource] = d.PreferenceSource
	}
	if len(d.Rules) > 0 {
		a[v1beta1.AnnotationPlacementRules] = strings.Join(d.Rules, ",")
	}
	return a
}

// Decision is what placing one pod whose images were all inspected did to it.
type Decision struct {
	// Outcome is the placement label value.
	Outcome Outcome
	// Architectures is the value of the architectures annotation: what the images support,
	// before any placement rule narrowed it.
	Architectures string
	// NoCommonArchitecture is set when the images share no architecture, or the placement rules
	// in RequiredBy left none of those they share: the pod's required affinity was made
	// unsatisfiable and no preference was merged.
	NoCommonArchitecture bool
	// Rules names the matched placement rules, in order (the placement-rules annotation).
	Rules []string
	// RequiredBy names the matched placement rules whose requiredArchitectures narrowed the
	// pod's architectures (none for a user-pinned pod, or when the images share none).
	RequiredBy []string
	// Preferred is the merge of the preferred weights (zero when no configuration applies).
	Preferred PreferredResult
	// PreferenceSource names the configuration whose weights were added, "" when none was (the
	// value of the preferred-affinity-source annotation).
	PreferenceSource string
	// SelectorErr names the PodPlacementConfigs left out for an invalid label selector.
	SelectorErr error
	// Tolerations are the tolerations of the architecture taints added to the pod
	// (AddArchitectureTolerations).
	Tolerations []corev1.Toleration
}

// Decide merges what the images support into pod's node affinity, required then preferred (the
// pod's preferred-architecture label, its PodPlacementConfigs by descending priority, the first
// matched placement rule with preferredArchitectures, then the ClusterPodPlacementConfig's
// nodeAffinityScoring; cluster may be nil), and adds the tolerations of the architecture taints
// of the architectures it placed the pod on. It changes pod.Spec only; labels, annotations and
// the gate are the caller's, written in the same request (Annotations lists the annotations).
//
// c holds what applies to every pod, passed apart because the cluster's preferences may not
// apply to a pod while its constraints always do (see ClusterStage):
//   - Taints: a pod whose user pinned the architecture gets no toleration: its architecture is
//     the user's choice, and so are its tolerations.
//   - Rules: the requiredArchitectures of every matched rule narrow the architectures the images
//     support (all supported architectures for images that run anywhere: such a pod then gets a
//     required term and OutcomeArchSet), and a pod left with none is treated as a pod whose
//     images share no architecture (NoCommonArchitecture, with RequiredBy naming the rules). A
//     pod whose user pinned the architecture is never narrowed: the user's constraints are never
//     overwritten. The rules' preference belongs with the cluster's (see ScoringSources): it is
//     left out when cluster is.
//   - OperatingSystems: the images' platforms of every operating system decide, and the required
//     affinity gets kubernetes.io/os as well (MergeRequiredPlatforms), also for a pod whose user
//     pinned the architecture but not the operating system.
func Decide(pod *corev1.Pod, images []ImageArchitectures, configs []v1beta1.PodPlacementConfig,
	cluster *v1beta1.ClusterPodPlacementConfig, c Constraints) Decision {
	archs, anyArch := Intersect(images)
	var byOS map[string]sets.Set[string]
	if c.OperatingSystems {
		byOS, anyArch = PlatformsByOS(images)
		archs = ArchitecturesOf(byOS)
	}
	d := Decision{Architectures: ArchitecturesAnnotation(archs, anyArch), Rules: RuleNames(c.Rules)}
	spec := &pod.Spec
	if !anyArch && archs.Len() == 0 {
		return d.noCommonArchitecture(spec) // no weight can matter
	}
	compatible := archs
	if anyArch {
		compatible = sets.New(v1beta1.SupportedArchitectures()...)
	}
	pinned := UserPinsArchitecture(spec)
	if !pinned {
		compatible, d.RequiredBy = NarrowByRules(compatible, c.Rules)
		if compatible.Len() == 0 {
			return d.noCommonArchitecture(spec)
		}
	}
	switch {
	case c.OperatingSystems && !anyArch:
		// The operating system is constrained even where the user pinned the architecture.
		if d.Outcome = MergeRequiredPlatforms(spec, NarrowPlatforms(spec, byOS, compatible)); d.Outcome == OutcomeNoCommonArch {
			return d.noCommonArchitecture(spec) // the nodeSelector's kubernetes.io/os has none of them
		}
	case pinned:
		d.Outcome = OutcomeUserPinned
	case anyArch && len(d.RequiredBy) == 0:
		d.Outcome = OutcomeAnyArchitecture
	default:
		d.Outcome = MergeRequiredArchitectures(spec, compatible)
	}
	if !pinned {
		d.Tolerations = AddArchitectureTolerations(spec, compatible, c.Taints)
	}
	sources, err := ScoringSources(pod, configs, c.Rules, cluster)
	d.SelectorErr = err
	if len(sources) == 0 {
		return d
	}
	d.Preferred = MergePreferredArchitectures(spec, compatible, sources)
	if len(d.Preferred.Applied) > 0 {
		d.PreferenceSource = d.Preferred.Applied[0].Source.String()
	}
	return d
}

// noCommonArchitecture makes the pod's required affinity unsatisfiable (MergeNoCommonArchitecture)
// and records it.
func (d Decision) noCommonArchitecture(spec *corev1.PodSpec) Decision {
	d.Outcome = MergeNoCommonArchitecture(spec)
	d.NoCommonArchitecture = true
	return d
}

// Constraints are the ClusterPodPlacementConfig's settings that apply to every pod placed,
// whether or not its preferences do (see ClusterStage).
type Constraints struct {
	// Taints are spec.architectureTaints (v1beta1.ArchitectureTaintsOf).
	Taints []v1beta1.ArchitectureTaint
	// Rules are the placement rules whose expression matched the pod, in the configuration's
	// order (placementrules.Evaluations.Matched; their evaluation is the caller's).
	Rules []v1beta1.PlacementRule
	// OperatingSystems is spec.operatingSystemPlacement: kubernetes.io/os is constrained too, from
	// the images' platforms of every operating system (MergeRequiredPlatforms).
	OperatingSystems bool
}

// ConstraintsOf returns the constraints of cluster (nil: none) for a pod the rules matched.
func ConstraintsOf(cluster *v1beta1.ClusterPodPlacementConfig, rules []v1beta1.PlacementRule) Constraints {
	c := Constraints{Taints: v1beta1.ArchitectureTaintsOf(cluster), Rules: rules}
	if cluster != nil {
		c.OperatingSystems = cluster.Spec.OperatingSystemPlacementEnabled()
	}
	return c
}

// NarrowByRules returns the architectures of compatible that the requiredArchitectures of every
// rule allow (a new set; compatible is not changed), and the names of the rules that have
// requiredArchitectures, in order. Rules without requiredArchitectures narrow nothing.
func NarrowByRules(compatible sets.Set[string], rules []v1beta1.PlacementRule) (sets.Set[string], []string) {
	narrowed := compatible.Clone()
	var by []string
	for _, r := range rules {
		if len(r.RequiredArchitectures) == 0 {
			continue
		}
		narrowed = narrowed.Intersection(sets.New(r.RequiredArchitectures...))
		by = append(by, r.Name)
	}
	return narrowed, by
}

// RuleNames returns the names of rules, in order; nil for none.
func RuleNames(rules []v1beta1.PlacementRule) []string {
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
	}
	return names
}

// Fallback merges "kubernetes.io/arch In [arch]" into the required node affinity of a pod whose
// images could not be inspected (ClusterPodPlacementConfig spec.fallbackArchitecture), with the
// tolerations of arch's taints, following the rules of MergeRequiredArchitectures. ok is false,
// and spec unchanged, when the user's own constraints already decide the architecture: the
// fallback is for pods archgate would otherwise release unconstrained, never an override.
func Fallback(spec *corev1.PodSpec, arch string, taints []v1beta1.ArchitectureTaint) (tolerations []corev1.Toleration, ok bool) {
	archs := sets.New(arch)
	if MergeRequiredArchitectures(spec, archs) != OutcomeArchSet {
		return nil, false
	}
	return AddArchitectureTolerations(spec, archs, taints), true
}
