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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlacementParametersName is the name of the one PlacementParameters object the pod placement
// controller publishes.
const PlacementParametersName = "cluster"

// ArchitecturesAny is the value of a PlacementParameters image entry for an image that runs on
// any architecture (it carries no binaries).
const ArchitecturesAny = "*"

// PlacementParameters is what the apiserver needs to place a pod at admission without calling
// archgate's webhook: the MutatingAdmissionPolicy the operator renders reads it as its params.
// The pod placement controller's leader writes it; nobody else should. It is a custom resource,
// not a ConfigMap, because ConfigMap keys cannot hold the '/', ':' and '@' of image references,
// and because the apiserver watches every object of a policy's param kind across the cluster:
// a kind of its own keeps that watch to one small object.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=placementparameters,scope=Cluster
// +kubebuilder:printcolumn:name=Published,JSONPath=`.publishedAt`,type=date
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="PlacementParameters is a singleton, .metadata.name must be 'cluster'"
type PlacementParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// publishedAt is when the controller last wrote the object.
	// +optional
	PublishedAt *metav1.Time `json:"publishedAt,omitempty"`
	// images maps an image reference, as a pod's container writes it, to the architectures the
	// image runs on: kubernetes.io/arch values, sorted and joined by commas, or "*" for an image
	// that runs on any architecture. Only results read anonymously or with the global pull
	// secret are listed; a reference is listed in every form that names the same image
	// ("nginx", "docker.io/library/nginx:latest", ...).
	// +optional
	Images map[string]string `json:"images,omitempty"`
	// podPlacementConfigNamespaces maps each namespace that has PodPlacementConfigs to how many
	// it has. The policy leaves the pods of those namespaces to the controller: it cannot
	// evaluate their label selectors.
	// +optional
	PodPlacementConfigNamespaces map[string]int32 `json:"podPlacementConfigNamespaces,omitempty"`
}

// +kubebuilder:object:root=true

// PlacementParametersList is a list of PlacementParameters.
type PlacementParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementParameters `json:"items"`
}
