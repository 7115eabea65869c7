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

// Package v1alpha1 serves the deprecated multiarch.openshift.io/v1alpha1 version of
// ClusterPodPlacementConfig, so that manifests written for the upstream multiarch tuning
// operator's v1alpha1 keep applying. PodPlacementConfig never had a v1alpha1 upstream and has
// none here.
//
// Conversion is the apiserver's own (strategy None: only apiVersion changes), not a webhook:
// v1alpha1 reuses the v1beta1 spec and status types, so both versions have one schema and
// nothing can be lost in either direction, and the CRD keeps working on every install path
// even while the operator is down. The price is that v1alpha1 also accepts the v1beta1 fields
// upstream's v1alpha1 did not have; crd_test.go holds the two schemas equal.
//
// +kubebuilder:object:generate=true
// +groupName=multiarch.openshift.io
package v1alpha1
