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

// Condition types of the ClusterPodPlacementConfig status.
const (
	// ConditionAvailable is True when the webhook and the pod placement controller each have at
	// least one ready replica and the MutatingWebhookConfiguration is in place.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while a component is being rolled out or updated.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the operand cannot serve as configured: a component that was
	// available lost its ready replicas or its rollout failed, a referenced object (pull secret,
	// CA bundle) is missing, or a component cannot be applied. A first rollout that is still in
	// progress is Progressing, not Degraded.
	ConditionDegraded = "Degraded"
	// ConditionDeprovisioning is True while the operand is being removed: the gate is released from
	// the remaining gated pods before the components are deleted.
	ConditionDeprovisioning = "Deprovisioning"
	// ConditionLinkedObjectsExist is True when the objects referenced by the spec
	// (globalPullSecretRef, caBundleConfigmapRef) exist.
	ConditionLinkedObjectsExist = "LinkedObjectsExist"
	// ConditionAdmissionPolicyInEffect is True when the apiserver places pods with archgate's
	// MutatingAdmissionPolicy (spec.admissionPolicy), False with the reason when the webhook
	// does it alone.
	ConditionAdmissionPolicyInEffect = "AdmissionPolicyInEffect"
)

// Condition reasons of the ClusterPodPlacementConfig status (UpperCamelCase, as metav1.Condition requires).
const (
	// ReasonAsExpected is the reason of a condition in its normal state.
	ReasonAsExpected = "AsExpected"
	// ReasonAllComponentsReady means every component is rolled out and ready.
	ReasonAllComponentsReady = "AllComponentsReady"
	// ReasonRollingOut means a component's rollout is in progress.
	ReasonRollingOut = "RollingOut"
	// ReasonComponentsUnavailable means a component has no ready replica.
	ReasonComponentsUnavailable = "ComponentsUnavailable"
	// ReasonPullSecretNotFound means the secret named by globalPullSecretRef does not exist.
	ReasonPullSecretNotFound = "PullSecretNotFound"
	// ReasonCABundleNotFound means the config map named by caBundleConfigmapRef does not exist.
	ReasonCABundleNotFound = "CABundleNotFound"
	// ReasonRegistryConfigNotFound means a ConfigMap named by registriesConfConfigmapRef or
	// registryCertsConfigmapRef does not exist or lacks its data.
	ReasonRegistryConfigNotFound = "RegistryConfigNotFound"
	// ReasonRegistryConfigInvalid means a referenced registry configuration (registries.conf,
	// per-registry certificates, the CA bundle) cannot be used; the message names the object,
	// the key and the error.
	ReasonRegistryConfigInvalid = "RegistryConfigInvalid"
	// ReasonInvalidConfiguration means the spec cannot be applied (for example an invalid selector).
	ReasonInvalidConfiguration = "InvalidConfiguration"
	// ReasonReleasingGatedPods means the operand is being removed and gated pods are being released.
	ReasonReleasingGatedPods = "ReleasingGatedPods"
	// ReasonApplyFailed means the operator could not create or update a component; the message
	// names the object and the apiserver's answer.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonReleaseFailed means gated pods could not be released while the operand is being
	// removed; the message names pods and errors.
	ReasonReleaseFailed = "ReleaseFailed"
	// ReasonWebhookUnregistered means the MutatingWebhookConfiguration was removed because a
	// component became unavailable (fail open): new pods are not gated until it is back.
	ReasonWebhookUnregistered = "WebhookUnregistered"
	// ReasonPolicyEnforced means the apiserver applies the admission policy (a probe policy
	// mutated a dry-run request).
	ReasonPolicyEnforced = "PolicyEnforced"
	// ReasonPolicyNotWanted means the spec turns the policy off: admissionPolicy or
	// admissionPlacement Disabled, or localPlacement Enabled; the message says which.
	ReasonPolicyNotWanted = "PolicyNotWanted"
	// ReasonPolicyAPINotServed means the apiserver does not serve
	// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy.
	ReasonPolicyAPINotServed = "PolicyAPINotServed"
	// ReasonPolicyNotEnforced means the apiserver serves the API but did not apply the probe
	// policy (the MutatingAdmissionPolicy feature gate is off, or the policy is still loading).
	ReasonPolicyNotEnforced = "PolicyNotEnforced"
	// ReasonPolicyPending means the components are not rolled out yet.
	ReasonPolicyPending = "PolicyPending"
)

// Condition types of the PodPlacementConfig status.
const (
	// ConditionSelectorValid is True when spec.labelSelector parses; an invalid configuration is
	// ignored by placement, with this condition saying why.
	ConditionSelectorValid = "SelectorValid"
	// ConditionInEffect is True when the configuration's weights are applied to the pods it
	// selects: the ClusterPodPlacementConfig exists and is Available, the selector is valid and
	// the nodeAffinityScoring plugin is enabled.
	ConditionInEffect = "InEffect"
	// ConditionNamespaceConfigsValid is False when a PodPlacementConfig of the namespace has an
	// invalid selector or shares its priority with another (created while the validating webhook
	// was down): the message names them. Every configuration of the namespace reports it.
	ConditionNamespaceConfigsValid = "NamespaceConfigsValid"
	// A PodPlacementConfig also reports ConditionAvailable, ConditionProgressing and
	// ConditionDegraded: the state of its namespace's local components (ClusterPodPlacementConfig
	// spec.localPlacement), or ReasonLocalPlacementDisabled when there are none.
)

// Condition reasons of the PodPlacementConfig status.
const (
	// ReasonInvalidLabelSelector means spec.labelSelector does not parse; the message says why.
	ReasonInvalidLabelSelector = "InvalidLabelSelector"
	// ReasonClusterConfigMissing means there is no ClusterPodPlacementConfig: nothing is gated.
	ReasonClusterConfigMissing = "ClusterConfigMissing"
	// ReasonClusterConfigNotAvailable means the ClusterPodPlacementConfig is not Available.
	ReasonClusterConfigNotAvailable = "ClusterConfigNotAvailable"
	// ReasonPluginDisabled means nodeAffinityScoring is unset or disabled: nothing to apply.
	ReasonPluginDisabled = "PluginDisabled"
	// ReasonApplied means the weights are applied to the selected pods.
	ReasonApplied = "Applied"
	// ReasonPriorityConflict means two PodPlacementConfigs of the namespace share a priority.
	ReasonPriorityConflict = "PriorityConflict"
	// ReasonLocalPlacementDisabled means the namespace has no local components: the cluster-wide
	// controller applies the configuration.
	ReasonLocalPlacementDisabled = "LocalPlacementDisabled"
)
