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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Kinds of the configurations a ScoringSource comes from.
const (
	KindPodPlacementConfig        = "PodPlacementConfig"
	KindClusterPodPlacementConfig = "ClusterPodPlacementConfig"
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

// SkipReason says why a proposed preference was not applied.
type SkipReason string

// Reasons for skipping a preference. Only SkipPodPreference and SkipHigherPriority are
// conflicts worth an Event; the others are expected.
const (
	// SkipPodPreference: the pod's own preferred terms already weight the architecture.
	SkipPodPreference SkipReason = "PodPreference"
	// SkipHigherPriority: a source applied before (higher priority) already weights it.
	SkipHigherPriority SkipReason = "HigherPriorityConfig"
	// SkipIncompatible: not every image of the pod supports the architecture, so a weight would
	// only attract the pod to nodes where it cannot run.
	SkipIncompatible SkipReason = "IncompatibleArchitecture"
	// SkipInvalidWeight: the weight is outside 1-100 and the apiserver would reject the pod.
	SkipInvalidWeight SkipReason = "InvalidWeight"
)

// SkippedPreference is a proposed preference that was not applied.
type SkippedPreference struct {
	Preference
	// Reason says why.
	Reason SkipReason
	// By names what already weights the architecture (the pod, or a higher-priority source) for
	// SkipPodPreference and SkipHigherPriority; it is the zero SourceRef otherwise.
	By SourceRef
}

// PreferredResult reports what MergePreferredArchitectures did.
type PreferredResult struct {
	// Applied lists the preferred terms added, in order.
	Applied []Preference
	// Skipped lists the proposals not applied, in the order they were considered.
	Skipped []SkippedPreference
}

// Conflicts returns the skipped preferences that collided with the pod's own terms or with a
// higher-priority source: the ones worth an Event.
func (r PreferredResult) Conflicts() []SkippedPreference {
	var out []SkippedPreference
	for _, s := range r.Skipped {
		if s.Reason == SkipPodPreference || s.Reason == SkipHigherPriority {
			out = append(out, s)
		}
	}
	return out
}

// MergePreferredArchitectures appends, for each platform of each source in order, the preferred
// term "weight: kubernetes.io/arch In [architecture]" to spec, unless (checked in this order)
//
//   - the architecture is not in compatible, the set every image of the pod supports: a weight
//     there is dead at best (the required term already excludes those nodes) and harmful when the
//     required term was not set (user-pinned pods), as it would pull the pod towards nodes where
//     it cannot run. A nil or empty compatible set therefore skips every proposal;
//   - the weight is outside 1-100;
//   - a preferred term of the pod already has a kubernetes.io/arch matchExpression listing that
//     architecture (any operator): the user's own preference wins and is never changed;
//   - an earlier source (higher priority) already added a term for it.
//
// Overlaps are decided per architecture, not per source: a lower-priority source still adds the
// architectures nobody weighted before it.
//
// sources must already be in priority order (see ScoringSources). spec.Affinity is replaced by a
// modified copy only when a term is added; memory reachable from the old spec.Affinity is never
// written. The required node affinity is untouched.
func MergePreferredArchitectures(spec *corev1.PodSpec, compatible sets.Set[string], sources []ScoringSource) PreferredResult {
	weighted := map[string]SourceRef{} // architecture → what weights it already
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		for _, term := range spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			for _, r := range term.Preference.MatchExpressions {
				if isArchitectureRequirement(r) {
					for _, v := range r.Values {
						weighted[v] = SourceRef{}
					}
				}
			}
		}
	}

	var result PreferredResult
	var added []corev1.PreferredSchedulingTerm
	for _, src := range sources {
		for _, p := range src.Platforms {
			pref := Preference{Source: src.Ref, Architecture: p.Architecture, Weight: p.Weight}
			if !compatible.Has(p.Architecture) {
				result.Skipped = append(result.Skipped, SkippedPreference{Preference: pref, Reason: SkipIncompatible})
				continue
			}
			if p.Weight < 1 || p.Weight > 100 {
				result.Skipped = append(result.Skipped, SkippedPreference{Preference: pref, Reason: SkipInvalidWeight})
				continue
			}
			if by, ok := weighted[p.Architecture]; ok {
				reason := SkipHigherPriority
				if by.IsPod() {
					reason = SkipPodPreference
				}
				result.Skipped = append(result.Skipped, SkippedPreference{Preference: pref, Reason: reason, By: by})
				continue
			}
			weighted[p.Architecture] = src.Ref
			result.Applied = append(result.Applied, pref)
			added = append(added, corev1.PreferredSchedulingTerm{
				Weight: p.Weight,
				Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key:      v1beta1.NodeArchLabel,
						Operator: corev1.NodeSelectorOpIn,
						Values:   []string{p.Architecture},
					}},
				},
			})
		}
	}
	if len(added) == 0 {
		return result
	}

	affinity := spec.Affinity.DeepCopy()
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
		affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, added...)
	spec.Affinity = affinity
	return result
}
