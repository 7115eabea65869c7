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

import "k8s.io/apimachinery/pkg/types"

// MirrorCredentialsKey is the key of the auth file (a .dockerconfigjson) in the Secret named
// by spec.imageInspection.mirrorCredentialsSecretRef.
const MirrorCredentialsKey = ".dockerconfigjson"

// LocalSecretReference names a Secret in the operator's namespace: the controller mounts it,
// and a pod can only mount Secrets of its own namespace.
type LocalSecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="name must be an object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}

// MirrorCredentials is the Secret named by imageInspection.mirrorCredentialsSecretRef, in the
// operator's namespace, or nil when unset.
func (s *ClusterPodPlacementConfigSpec) MirrorCredentials(operatorNamespace string) *types.NamespacedName {
	if s.ImageInspection == nil || s.ImageInspection.MirrorCredentialsSecretRef == nil {
		return nil
	}
	return &types.NamespacedName{Namespace: operatorNamespace, Name: s.ImageInspection.MirrorCredentialsSecretRef.Name}
}
