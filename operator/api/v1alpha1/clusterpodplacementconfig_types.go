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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// DeprecationWarning is the warning the apiserver returns to every v1alpha1 request.
const DeprecationWarning = "multiarch.openshift.io/v1alpha1 ClusterPodPlacementConfig is deprecated; use multiarch.openshift.io/v1beta1"

// ClusterPodPlacementConfig is the deprecated v1alpha1 form of the v1beta1
// ClusterPodPlacementConfig, with the same spec and status: read and written through it, an
// object keeps every v1beta1 field.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="multiarch.openshift.io/v1alpha1 ClusterPodPlacementConfig is deprecated; use multiarch.openshift.io/v1beta1"
// +kubebuilder:resource:path=clusterpodplacementconfigs,scope=Cluster,shortName=cppc
// +kubebuilder:printcolumn:name=Available,JSONPath=`.status.conditions[?(@.type=="Available")].status`,type=string
// +kubebuilder:printcolumn:name=Progressing,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`,type=string
// +kubebuilder:printcolumn:name=Degraded,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,type=string
// +kubebuilder:printcolumn:name=Version,JSONPath=`.status.operatorVersion`,type=string,priority=1
// +kubebuilder:printcolumn:name=Age,JSONPath=`.metadata.creationTimestamp`,type=date
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="ClusterPodPlacementConfig is a singleton, .metadata.name must be 'cluster'"
type ClusterPodPlacementConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration of the operand.
	// +optional
	// +kubebuilder:default={}
	Spec v1beta1.ClusterPodPlacementConfigSpec `json:"spec,omitempty"`
	// status is the observed state of the operand.
	// +optional
	Status v1beta1.ClusterPodPlacementConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterPodPlacementConfigList is a list of v1alpha1 ClusterPodPlacementConfig.
type ClusterPodPlacementConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPodPlacementConfig `json:"items"`
}
