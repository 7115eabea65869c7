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
)

// NoSupportedArchitectureKey is the node label key of the requirement that keeps a pod whose
// images share no architecture Pending: "multiarch.openshift.io/no-supported-arch Exists".
// No node carries it, so the scheduler reports the pod unschedulable, naming the node affinity.
// The key is reserved: labelling a node with it would let such pods run there.
const NoSupportedArchitectureKey = "multiarch.openshift.io/no-supported-arch"

// NoSupportedArchitectureRequirement returns the unsatisfiable requirement
// "multiarch.openshift.io/no-supported-arch Exists".
func NoSupportedArchitectureRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: NoSupportedArchitectureKey, Operator: corev1.NodeSelectorOpExists}
}

// MergeNoCommonArchitecture makes the required node affinity of spec unsatisfiable, for a pod
// whose images share no architecture: no node can run all of them, so the pod must not start
// anywhere (it would crash with "exec format error"), but it must not stay gated either. The
// scheduler then keeps it Pending and reports why. It always returns OutcomeNoCommonArch.
//
// The rules stay within what KEP-3838 allows on a gated pod (only additions to matchExpressions):
//
//   - no required node affinity (nil, or no terms): a single term with the requirement is set;
//   - required terms exist: the requirement is appended to every term that selects nodes, since
//     terms are ORed and each must become unsatisfiable. Empty terms already match no node and
//     are kept as they are; terms that already carry the requirement are not changed again.
//
// This applies whatever the user's own constraints say, pins of kubernetes.io/arch included:
// the images run nowhere, whichever architecture was chosen. nodeSelector, preferred terms and
// other expressions are never touched. spec.Affinity is replaced by a modified copy when it
// changes: memory reachable from the old spec.Affinity is never written.
func MergeNoCommonArchitecture(spec *corev1.PodSpec) Outcome {
	appendToRequiredTerms(spec, needsNoSupportedArchitecture, NoSupportedArchitectureRequirement)
	return OutcomeNoCommonArch
}

// needsNoSupportedArchitecture reports whether the term selects nodes and lacks the
// unsatisfiable requirement.
func needsNoSupportedArchitecture(term corev1.NodeSelectorTerm) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	return !slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
		return r.Key == NoSupportedArchitectureKey && r.Operator == corev1.NodeSelectorOpExists
	})
}
