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

// Package placement holds the pure rules that turn a pod's compatible architectures and the
// placement configurations into node affinity: the required kubernetes.io/arch constraint
// (KEP-3838 merge rules) and the preferred per-architecture weights. Nothing here talks to the
// apiserver or to a registry.
package placement

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Outcome is what the pod placement controller did to a pod's required node affinity; its values
// are the values of the v1beta1.LabelPlacement pod label.
type Outcome string

// Outcomes of the pod placement controller.
const (
	// OutcomeArchSet: the compatible architectures were merged into the required node affinity.
	OutcomeArchSet Outcome = v1beta1.PlacementArchSet
	// OutcomeUserPinned: the user's constraints already decide the architecture; nothing was changed.
	OutcomeUserPinned Outcome = v1beta1.PlacementUserPinned
	// OutcomeNoCommonArch: the images share no architecture. MergeRequiredArchitectures changes
	// nothing; the caller applies MergeNoCommonArchitecture, which keeps the pod Pending.
	OutcomeNoCommonArch Outcome = v1beta1.PlacementNoCommonArch
	// OutcomeInspectionFailed: inspection failed past the retry budget; the caller removes the
	// gate without changing the affinity. MergeRequiredArchitectures never returns it.
	OutcomeInspectionFailed Outcome = v1beta1.PlacementInspectionFailed
	// OutcomeAnyArchitecture: every image runs on any architecture (images without binaries, such
	// as operator bundles), so no architecture is required. MergeRequiredArchitectures never
	// returns it; the caller decides it from the inspection results.
	OutcomeAnyArchitecture Outcome = v1beta1.PlacementAnyArch
	// OutcomeGateAgeExceeded: the pod was gated longer than the maximum gate age, whatever held
	// it; the caller removes the gate without touching the affinity.
	OutcomeGateAgeExceeded Outcome = v1beta1.PlacementGateAgeExceeded
)

// LabelValue returns the value of the v1beta1.LabelPlacement label that records the outcome.
func (o Outcome) LabelValue() string { return string(o) }

// MergeRequiredArchitectures merges "kubernetes.io/arch In archs" into the required node affinity
// of spec, following KEP-3838 and the design's rules, and reports what it did:
//
//   - spec.nodeSelector has kubernetes.io/arch: the user pinned the architecture. nodeSelector
//     is ANDed with the affinity, so adding our requirement could only make the pod unschedulable
//     where the user asked for it; nothing is changed (OutcomeUserPinned).
//   - no required node affinity (nil affinity, nil nodeAffinity, nil or empty nodeSelectorTerms;
//     the API rejects an empty list, so it is treated as absent): a single term
//     "kubernetes.io/arch In archs" is set.
//   - required terms exist: the requirement is appended to the matchExpressions of each term that
//     has no kubernetes.io/arch matchExpression (any operator; matchFields do not count). Terms
//     already constraining the architecture are kept as they are, and so are empty terms, which
//     match no node: adding a requirement to one would widen the pod's placement.
//     If no term needs the requirement, the user pinned the architecture (OutcomeUserPinned).
//   - archs is empty (and the user did not pin): the images share no architecture; nothing is
//     changed (OutcomeNoCommonArch). The pod placement controller does not get here: it applies
//     MergeNoCommonArchitecture to every pod whose images share no architecture.
//
// User terms are never reordered or dropped, other expressions are never touched, and preferred
// terms are left alone. The values are sorted, so the result is deterministic. spec.Affinity is
// replaced by a modified copy: memory reachable from the old spec.Affinity is never written, so
// spec may be a shallow copy of a cached pod.
func MergeRequiredArchitectures(spec *corev1.PodSpec, archs sets.Set[string]) Outcome {
	if UserPinsArchitecture(spec) {
		return OutcomeUserPinned
	}
	if archs.Len() == 0 {
		return OutcomeNoCommonArch
	}
	appendToRequiredTerms(spec, needsArchitecture, func() corev1.NodeSelectorRequirement {
		return ArchitectureRequirement(archs)
	})
	return OutcomeArchSet
}

// appendToRequiredTerms appends newRequirement() to every required node selector term for which
// needs holds, or sets the single term [newRequirement()] when there is no required term. When
// terms exist but none needs it, spec is left as it is. Otherwise spec.Affinity is replaced by a
// modified copy, so memory reachable from the old spec.Affinity is never written; newRequirement
// is called once per term, so terms never share a Values array.
func appendToRequiredTerms(spec *corev1.PodSpec, needs func(corev1.NodeSelectorTerm) bool, newRequirement func() corev1.NodeSelectorRequirement) {
	terms := requiredTerms(spec)
	if len(terms) > 0 && !slices.ContainsFunc(terms, needs) {
		return
	}
	affinity := copyNodeAffinity(spec)
	required := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{newRequirement()},
			}},
		}
	} else {
		for i := range required.NodeSelectorTerms {
			if term := &required.NodeSelectorTerms[i]; needs(*term) {
				term.MatchExpressions = append(term.MatchExpressions, newRequirement())
			}
		}
	}
	spec.Affinity = affinity
}

// copyNodeAffinity returns a deep copy of spec's affinity with its NodeAffinity set, for a
// caller to change and put back: memory reachable from spec.Affinity is never written, so spec
// may be a shallow copy of a cached pod.
func copyNodeAffinity(spec *corev1.PodSpec) *corev1.Affinity {
	affinity := spec.Affinity.DeepCopy()
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return affinity
}

// ArchitectureRequirement returns the node selector requirement "kubernetes.io/arch In archs",
// with the values sorted.
func ArchitectureRequirement(archs sets.Set[string]) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{
		Key:      v1beta1.NodeArchLabel,
		Operator: corev1.NodeSelectorOpIn,
		Values:   sets.List(archs),
	}
}

// NodeSelectorPinsArchitecture reports whether spec.nodeSelector sets kubernetes.io/arch.
func NodeSelectorPinsArchitecture(spec *corev1.PodSpec) bool {
	_, ok := spec.NodeSelector[v1beta1.NodeArchLabel]
	return ok
}

// UserPinsArchitecture reports whether the user's own constraints already decide the pod's
// architecture, so that MergeRequiredArchitectures would return OutcomeUserPinned whatever the
// images support: spec.nodeSelector sets kubernetes.io/arch, or required node selector terms
// exist and none of them lacks a kubernetes.io/arch matchExpression (empty terms aside).
func UserPinsArchitecture(spec *corev1.PodSpec) bool {
	if NodeSelectorPinsArchitecture(spec) {
		return true
	}
	terms := requiredTerms(spec)
	return len(terms) > 0 && !slices.ContainsFunc(terms, needsArchitecture)
}

func requiredTerms(spec *corev1.PodSpec) []corev1.NodeSelectorTerm {
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil ||
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

// needsArchitecture reports whether the term selects nodes (an empty term selects none) and does
// not constrain kubernetes.io/arch yet.
func needsArchitecture(term corev1.NodeSelectorTerm) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	return !slices.ContainsFunc(term.MatchExpressions, isArchitectureRequirement)
}

func isArchitectureRequirement(r corev1.NodeSelectorRequirement) bool {
	return r.Key == v1beta1.NodeArchLabel
}
