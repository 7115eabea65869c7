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

// Package operator reconciles the ClusterPodPlacementConfig singleton: it rolls out the
// scheduling-gate webhook and the pod placement controller as an ordered graph of steps, each
// of which applies its objects (server-side apply) and blocks the steps after it until they are
// ready; it registers the MutatingWebhookConfiguration only once both Deployments are available
// and removes it as soon as one is not (fail open). On deletion it unregisters the webhook,
// releases every pod still held by the gate, deletes the components and only then lets the
// ClusterPodPlacementConfig go.
//
// The steps, in order:
//
//  1. linked objects: the Secret of globalPullSecretRef and the ConfigMap of
//     caBundleConfigmapRef exist (condition LinkedObjectsExist);
//  2. identity: ServiceAccounts and least-privilege RBAC;
//  3. serving: the webhook Service, the metrics Services, its serving certificate (self-signed, cert-manager or
//     service-ca) and the copy of the registry CA bundle;
//  4. deployments: the webhook and the pod placement controller, with their
//     PodDisruptionBudgets; ready when both are Available;
//  5. registration: the MutatingWebhookConfiguration.
package operator
