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

package v1beta1

// PlacementRule decides, in CEL, which architectures the pods it matches may or should run on:
// the cluster administrator's policy, written against the pod itself ("pods labelled team=ml
// prefer arm64", "pods of the batch namespaces run on amd64 only").
// +kubebuilder:validation:XValidation:rule="(has(self.requiredArchitectures) && size(self.requiredArchitectures) > 0) || (has(self.preferredArchitectures) && size(self.preferredArchitectures) > 0)",message="a placement rule needs requiredArchitectures, preferredArchitectures or both"
// +kubebuilder:validation:XValidation:rule="!has(self.requiredArchitectures) || size(self.requiredArchitectures) == 0 || !has(self.preferredArchitectures) || self.preferredArchitectures.all(p, p.architecture in self.requiredArchitectures)",message="preferredArchitectures must be among requiredArchitectures: the rule keeps its pods off every other architecture, so a weight there could never apply"
type PlacementRule struct {
	// name identifies the rule in the pod's annotation multiarch.openshift.io/placement-rules,
	// in Events and in metrics: a DNS label (lower-case letters, digits and '-').
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="name must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// expression is a CEL expression that returns a bool: true when the rule applies to the pod.
	// The variable object is the pod, as the apiserver stores it: apiVersion, kind, metadata
	// (without managedFields) and spec; fields are read as in a MutatingAdmissionPolicy
	// (object.metadata.labels, object.spec.containers, ...). The Kubernetes CEL libraries are
	// available (strings, lists, sets, regex, ...). Read optional fields with has() or the ?
	// operator: a rule whose evaluation fails (a missing label read without has(), the cost
	// limit of an evaluation) does not match the pod, which gets a Warning Event
	// PlacementRuleFailed. The validating webhook refuses an expression that does not compile or
	// does not return a bool, naming the field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Expression string `json:"expression"`

	// requiredArchitectures are the only architectures the matched pods may run on: the
	// architectures their images support are narrowed to these (every matching rule narrows
	// them further). A pod left with none stays Pending with the Warning Event
	// NoCommonArchitecture, as a pod whose images share no architecture. A pod whose user pinned
	// the architecture (a kubernetes.io/arch nodeSelector, or every required node selector term
	// naming kubernetes.io/arch) is never narrowed.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Enum=amd64;arm64;ppc64le;s390x
	RequiredArchitectures []string `json:"requiredArchitectures,omitempty"`

	// preferredArchitectures are per-architecture weights for the matched pods, as in
	// nodeAffinityScoring. Only the first matching rule that has them adds its weights, and
	// only when neither the pod's preferred-architecture label nor one of its
	// PodPlacementConfigs did: the rule comes after those and before the cluster's
	// nodeAffinityScoring. Weights on architectures an image does not support are skipped.
	// +optional
	// +listType=map
	// +listMapKey=architecture
	// +kubebuilder:validation:MaxItems=4
	PreferredArchitectures []NodeAffinityScoringPlatformTerm `json:"preferredArchitectures,omitempty"`
}

// PlacementRulesOf returns cluster's spec.placementRules, nil when cluster is nil.
func PlacementRulesOf(cluster *ClusterPodPlacementConfig) []PlacementRule {
	if cluster == nil {
		return nil
	}
	return cluster.Spec.PlacementRules
}
