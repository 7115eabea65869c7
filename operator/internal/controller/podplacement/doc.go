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

// Package podplacement holds the pod placement controller: for each pod that carries the
// multiarch.openshift.io/scheduling-gate scheduling gate it inspects the pod's images, merges
// the architectures they share into the pod's node affinity (and the preferred per-architecture
// weights of the placement configurations), and removes the gate, all in one write.
//
// The controller's cache holds only gated pods (label multiarch.openshift.io/scheduling-gate=
// gated), the placement configurations and the global pull secret, so its memory grows with the
// pods waiting for it, not with the cluster. Pods' imagePullSecrets are read with uncached GETs
// behind a small TTL cache (see podSecrets).
//
// Reconcile follows a fixed order: fetch the pod, check the scope (our gate present, not
// deleting, not waiting for a retry), then run the phases (collect images, load credentials,
// inspect, decide, merge the required then the preferred affinity) on a scope, and commit the
// result in one optimistic-concurrency patch. Events are only recorded for anomalies.
package podplacement

// RBAC the pod placement controller needs (deploy/ renders the same rules):
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=multiarch.openshift.io,resources=podplacementconfigs;clusterpodplacementconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=system
