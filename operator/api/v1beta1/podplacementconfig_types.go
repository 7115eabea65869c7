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

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PodPlacementConfigSpec is a namespaced placement configuration for a subset of pods.
type PodPlacementConfigSpec struct {
	// labelSelector selects the pods of the namespace this configuration applies to. Empty or
	// unset selects every pod of the namespace.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// priority orders the configurations matching one pod, higher first, in the range 0-255.
	// Only the first matching configuration with an applicable platform adds preferred terms,
	// and none does when the pod has preferred kubernetes.io/arch terms of its own; the
	// ClusterPodPlacementConfig comes after all of them.
	// Configurations of equal priority are ordered by name.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=255
	Priority int32 `json:"priority,omitempty"`

	// plugins configures the placement plugins for the selected pods. execFormatErrorMonitor is
	// cluster-wide and is refused here.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.execFormatErrorMonitor)",message="execFormatErrorMonitor is cluster-wide: set it in the ClusterPodPlacementConfig"
	Plugins *Plugins `json:"plugins,omitempty"`
}

// PodPlacementConfigStatus is the observed state of a PodPlacementConfig.
type PodPlacementConfigStatus struct {
	// conditions are the latest observations of the configuration's state: SelectorValid and
	// InEffect, written by the operator. (Two configurations of a namespace cannot share a
	// priority: the validating webhook refuses it.)
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodPlacementConfig tunes the placement of the pods of its namespace that match its label
// selector, on top of the ClusterPodPlacementConfig (which must exist).
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=podplacementconfigs,scope=Namespaced,shortName=ppc
// +kubebuilder:printcolumn:name=Priority,JSONPath=`.spec.priority`,type=integer
// +kubebuilder:printcolumn:name=In Effect,JSONPath=`.status.conditions[?(@.type=="InEffect")].status`,type=string
// +kubebuilder:printcolumn:name=Reason,JSONPath=`.status.conditions[?(@.type=="InEffect")].reason`,type=string
// +kubebuilder:printcolumn:name=Selector Valid,JSONPath=`.status.conditions[?(@.type=="SelectorValid")].status`,type=string,priority=1
// +kubebuilder:printcolumn:name=Namespace Configs Valid,JSONPath=`.status.conditions[?(@.type=="NamespaceConfigsValid")].status`,type=string,priority=1
// +kubebuilder:printcolumn:name=Local Available,JSONPath=`.status.conditions[?(@.type=="Available")].status`,type=string,priority=1
// +kubebuilder:printcolumn:name=Age,JSONPath=`.metadata.creationTimestamp`,type=date
type PodPlacementConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration.
	// +optional
	Spec PodPlacementConfigSpec `json:"spec,omitempty"`
	// status is the observed state.
	// +optional
	Status PodPlacementConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodPlacementConfigList is a list of PodPlacementConfig.
type PodPlacementConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodPlacementConfig `json:"items"`
}
