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
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Kinds of the configurations a ScoringSource comes from.
const (
	KindPodPlacementConfig        = "PodPlacementConfig"
	KindClusterPodPlacementConfig = "ClusterPodPlacementConfig"
	// KindPodLabel is the pod's preferred-architecture label (LabelSource); the source's name
	// is the label's key.
	KindPodLabel = "label"
	// KindPlacementRule is a placement rule of the ClusterPodPlacementConfig (RuleSource); the
	// source's name is the rule's.
	KindPlacementRule = "PlacementRule"
)

// SourceRef names the configuration that proposed a preference. The zero SourceRef stands for
// the pod's own preferred terms.
type SourceRef struct {
	Kind      string
	Namespace string
	Name      string
}

// IsPod reports whether the reference stands for the pod's own preferred terms.
func (r SourceRef) IsPod() bool { return r == SourceRef{} }

// String returns "Kind namespace/name", "Kind name" for cluster-scoped sources, or "pod".
func (r SourceRef) String() string {
	switch {
	case r.IsPod():
		return "pod"
	case r.Namespace == "":
		return r.Kind + " " + r.Name
	default:
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
}

// ScoringSource is one enabled nodeAffinityScoring configuration, in the order it is applied.
type ScoringSource struct {
	// Ref names the configuration.
	Ref SourceRef
	// Platforms are its per-architecture weights.
	Platforms []v1beta1.NodeAffinityScoringPlatformTerm
}

// Preference is one per-architecture weight proposed by a source.
type Preference struct {
	Source       SourceRef
	Architecture string
	Weight       int32
}

// SkipReason says why a proposal was not applied.
type SkipReason string

// Reasons for skipping. SkipPodPreference and SkipHigherPriority skip a whole source (see
// SkippedSource) and are conflicts worth an Event; the others skip one platform of a source
// and are expected.
const (
	// SkipPodPreference: the pod's own preferred terms already constrain kubernetes.io/arch.
	SkipPodPreference SkipReason = "PodPreference"
	// SkipHigherPriority: a source applied before (higher priority) already added preferred
	// kubernetes.io/arch terms.
	SkipHigherPriority SkipReason = "HigherPriorityConfig"
	// SkipIncompatible: not every image of the pod supports the architecture, so a weight would
	// only attract the pod to nodes where it cannot run.
	SkipIncompatible SkipReason = "IncompatibleArchitecture"
	// SkipInvalidWeight: the weight is outside 1-100 and the apiserver would reject the pod.
	SkipInvalidWeight SkipReason = "InvalidWeight"
	// SkipDuplicate: the source lists the architecture more than once; the first entry wins.
	// (The CRDs reject such lists; this only guards against objects written around validation.)
	SkipDuplicate SkipReason = "DuplicateArchitecture"
)

// SkippedPreference is one platform of an applied source that was not turned into a term
// (SkipIncompatible, SkipInvalidWeight or SkipDuplicate).
type SkippedPreference struct {
	Preference
	// Reason says why.
	Reason SkipReason
}

// SkippedSource is a source whose platforms were all left out because preferred
// kubernetes.io/arch terms already existed when its turn came.
type SkippedSource struct {
	// Source names the skipped configuration.
	Source SourceRef
	// Reason is SkipPodPreference or SkipHigherPriority.
	Reason SkipReason
	// By names what already had preferred kubernetes.io/arch terms: the pod (the zero
	// SourceRef) or the higher-priority source that added them.
	By SourceRef
}

// PreferredResult reports what MergePreferredArchitectures did.
type PreferredResult struct {
	// Applied lists the preferred terms added, in order. They all come from one source.
	Applied []Preference
	// Skipped lists the platforms of the applied source (or of sources that had nothing
	// applicable) that were not turned into terms, in the order they were considered.
	Skipped []SkippedPreference
	// SkippedSources lists the sources left out whole, in priority order.
	SkippedSources []SkippedSource
}

// Conflicts returns the sources skipped because the pod's own preferred terms already weight
// architectures: the ones worth an Event. A lower-priority configuration skipped because a
// higher-priority one applied is the documented precedence, not an anomaly, and an Event per
// pod for it would cost the apiserver a write per pod.
func (r PreferredResult) Conflicts() []SkippedSource {
	var out []SkippedSource
	for _, s := range r.SkippedSources {
		if s.Reason == SkipPodPreference {
			out = append(out, s)
		}
	}
	return out
}

// MergePreferredArchitectures appends the preferred terms "weight: kubernetes.io/arch In
// [architecture]" of the first source (in the given order) that has an applicable platform,
// unless the pod already prefers architectures itself. Overlaps are decided per configuration,
// not per architecture: a configuration's weights are meaningful as a whole (75 arm64 / 25 amd64
// says "arm64 three times more"), and mixing the weights of two configurations, or of a
// configuration and the user, would produce a ratio nobody wrote.
//
// For each source in order:
//
//   - each platform is applicable unless the architecture is not in compatible, the set every
//     image of the pod supports (a weight there is dead at best, and harmful when the required
//     term was not set, as for user-pinned pods: it would pull the pod towards nodes where it
//     cannot run; a nil or empty compatible set therefore makes nothing applicable), or its weight
//     is outside 1-100, or the source already listed the architecture. Those platforms are
//     reported in Skipped;
//   - a source without any applicable platform adds nothing and blocks nothing;
//   - if the pod's own preferred terms constrain kubernetes.io/arch (any operator), or an
//     earlier source was applied, the whole source is skipped and reported in SkippedSources
//     (its platforms are not listed in Skipped); the user's own preference is never changed;
//   - otherwise its applicable platforms become terms, in order.
//
// sources must already be in priority order (see ScoringSources). spec.Affinity is replaced by a
// modified copy only when a term is added; memory reachable from the old spec.Affinity is never
// written. The required node affinity is untouched.
func MergePreferredArchitectures(spec *corev1.PodSpec, compatible sets.Set[string], sources []ScoringSource) PreferredResult {
	var result PreferredResult
	applied, by := PodPrefersArchitecture(spec), SourceRef{}
	var added []corev1.PreferredSchedulingTerm
	for _, src := range sources {
		var skipped []SkippedPreference
		var candidates []Preference
		seen := sets.New[string]()
		for _, p := range src.Platforms {
			pref := Preference{Source: src.Ref, Architecture: p.Architecture, Weight: p.Weight}
			switch {
			case !compatible.Has(p.Architecture):
				skipped = append(skipped, SkippedPreference{Preference: pref, Reason: SkipIncompatible})
			case p.Weight < 1 || p.Weight > 100:
				skipped = append(skipped, SkippedPreference{Preference: pref, Reason: SkipInvalidWeight})
			case seen.Has(p.Architecture):
				skipped = append(skipped, SkippedPreference{Preference: pref, Reason: SkipDuplicate})
			default:
				seen.Insert(p.Architecture)
				candidates = append(candidates, pref)
			}
		}
		switch {
		case len(candidates) == 0:
			result.Skipped = append(result.Skipped, skipped...)
		case applied:
			reason := SkipHigherPriority
			if by.IsPod() {
				reason = SkipPodPreference
			}
			result.SkippedSources = append(result.SkippedSources, SkippedSource{Source: src.Ref, Reason: reason, By: by})
		default:
			applied, by = true, src.Ref
			result.Skipped = append(result.Skipped, skipped...)
			result.Applied = candidates
			for _, c := range candidates {
				added = append(added, corev1.PreferredSchedulingTerm{
					Weight: c.Weight,
					Preference: corev1.NodeSelectorTerm{
						MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key:      v1beta1.NodeArchLabel,
							Operator: corev1.NodeSelectorOpIn,
							Values:   []string{c.Architecture},
						}},
					},
				})
			}
		}
	}
	if len(added) == 0 {
		return result
	}

	affinity := copyNodeAffinity(spec)
	affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
		affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, added...)
	spec.Affinity = affinity
	return result
}

// PodPrefersArchitecture reports whether a preferred node affinity term of spec has a
// kubernetes.io/arch matchExpression (any operator): then no configuration adds weights.
func PodPrefersArchitecture(spec *corev1.PodSpec) bool {
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil {
		return false
	}
	for _, term := range spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if slices.ContainsFunc(term.Preference.MatchExpressions, isArchitectureRequirement) {
			return true
		}
	}
	return false
}
