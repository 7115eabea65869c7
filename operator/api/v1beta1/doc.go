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

// Package v1beta1 holds the multiarch.openshift.io/v1beta1 API of archgate: the cluster-scoped
// ClusterPodPlacementConfig singleton, the namespaced PodPlacementConfig, and the well-known
// names (scheduling gate, labels, annotations) that the webhook and the pod placement controller
// share with users.
//
// The group and kinds keep the names of the upstream multiarch-tuning-operator so that objects
// written for it keep working.
//
// +kubebuilder:object:generate=true
// +groupName=multiarch.openshift.io
package v1beta1
