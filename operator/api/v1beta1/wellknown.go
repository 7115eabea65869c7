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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// SingletonName is the only accepted name of the ClusterPodPlacementConfig.
const SingletonName = "cluster"

// SchedulingGateName is the scheduling gate the webhook adds to new pods and the pod placement
// controller removes once it has merged the architecture constraints into the pod.
const SchedulingGateName = "multiarch.openshift.io/scheduling-gate"

// SchedulingGateIndex returns the position of archgate's scheduling gate among the pod's gates,
// -1 when the pod does not carry it. Gate membership is decided here only: the webhook, the pod
// placement controller, the release of gated pods, `archgate explain` and the simulator's
// recorder all ask this function (or HasSchedulingGate).
func SchedulingGateIndex(spec *corev1.PodSpec) int {
	return slices.IndexFunc(spec.SchedulingGates, IsSchedulingGate)
}

// HasSchedulingGate reports whether the pod carries archgate's scheduling gate; other gates do
// not count.
func HasSchedulingGate(spec *corev1.PodSpec) bool { return SchedulingGateIndex(spec) >= 0 }

// IsSchedulingGate reports whether g is archgate's scheduling gate.
func IsSchedulingGate(g corev1.PodSchedulingGate) bool { return g.Name == SchedulingGateName }

// LocalSchedulingGateName is the scheduling gate a namespace's local webhook adds to new pods
// of a namespace with PodPlacementConfigs (ClusterPodPlacementConfig spec.localPlacement), and
// the local pod placement controller removes once it has applied the namespace's preferences.
// The cluster-wide controller does not process a pod while it carries this gate.
const LocalSchedulingGateName = "multiarch.openshift.io/local-scheduling-gate"

// LocalSchedulingGateIndex returns the position of the local scheduling gate among the pod's
// gates, -1 when the pod does not carry it.
func LocalSchedulingGateIndex(spec *corev1.PodSpec) int {
	return slices.IndexFunc(spec.SchedulingGates, IsLocalSchedulingGate)
}

// HasLocalSchedulingGate reports whether the pod carries the local scheduling gate.
func HasLocalSchedulingGate(spec *corev1.PodSpec) bool { return LocalSchedulingGateIndex(spec) >= 0 }

// IsLocalSchedulingGate reports whether g is the local scheduling gate.
func IsLocalSchedulingGate(g corev1.PodSchedulingGate) bool { return g.Name == LocalSchedulingGateName }

// LabelLocalSchedulingGate marks pods carrying the local scheduling gate (LabelValueGated), and
// records how it went (LabelValueRemoved by the local controller, LabelValueReleased by the
// operator without processing). The local controller's cache selects LabelValueGated only.
const LabelLocalSchedulingGate = "multiarch.openshift.io/local-scheduling-gate"

// LabelValueReleased is the value of LabelLocalSchedulingGate on a pod whose local gate the
// operator removed without applying the namespace's preferences (the last PodPlacementConfig of
// the namespace, or the ClusterPodPlacementConfig, was deleted): the cluster-wide controller
// then applies the PodPlacementConfigs itself, as without local placement.
const LabelValueReleased = "released"

// NodeArchLabel is the well-known node label that carries the CPU architecture
// (the same key as corev1.LabelArchStable). With operating-system placement, NodeOSLabel is
// constrained too; archgate constrains no other node label.
const NodeArchLabel = "kubernetes.io/arch"

// NodeOSLabel is the well-known node label holding the node's operating system (GOOS values:
// linux, windows), which operating-system placement constrains.
const NodeOSLabel = "kubernetes.io/os"

// Labels and label values written on pods. Both are set in the same write as the change they
// describe, so they never cost an extra request to the apiserver.
const (
	// LabelSchedulingGate marks pods carrying the scheduling gate. The pod placement controller
	// watches only pods with LabelSchedulingGate=LabelValueGated, so its cache grows with gated
	// pods, not with the cluster.
	LabelSchedulingGate = "multiarch.openshift.io/scheduling-gate"
	// LabelValueGated is the value of LabelSchedulingGate while the gate is on the pod.
	LabelValueGated = "gated"
	// LabelValueRemoved is the value of LabelSchedulingGate after the controller removed the gate.
	LabelValueRemoved = "removed"
	// LabelValueAdmission is the value of LabelSchedulingGate on a pod the webhook placed at
	// admission: every image was known, so the pod never carried the gate.
	LabelValueAdmission = "admission"

	// LabelAdmissionPolicy is LabelValueTrue on every pod archgate's MutatingAdmissionPolicy
	// placed or gated. The webhook's registration skips such pods by its objectSelector, which
	// the apiserver checks before anything else: no CEL runs for them in the webhook's name.
	LabelAdmissionPolicy = "multiarch.openshift.io/admission-policy"

	// LabelPlacement records what the pod placement controller did to a pod; its values are the
	// PlacementXxx constants.
	LabelPlacement = "multiarch.openshift.io/placement"
	// PlacementArchSet means the compatible architectures were merged into the required node affinity.
	PlacementArchSet = "arch-set"
	// PlacementNoCommonArch means the pod's images share no architecture; the pod is kept Pending.
	PlacementNoCommonArch = "no-common-arch"
	// PlacementInspectionFailed means inspection failed past the retry budget; the gate was removed
	// without changing the pod's affinity.
	PlacementInspectionFailed = "inspection-failed"
	// PlacementUserPinned means the user's own constraints already decide the architecture; the
	// required node affinity was left untouched.
	PlacementUserPinned = "user-pinned"
	// PlacementAnyArch means every image of the pod runs on any architecture (images without
	// binaries, such as operator bundles); the required node affinity was left untouched.
	PlacementAnyArch = "any-arch"
	// PlacementReleased means the gate was removed without inspection because the operand is being
	// removed (the ClusterPodPlacementConfig was deleted).
	PlacementReleased = "released"
	// PlacementGateAgeExceeded means the pod kept the gate longer than
	// spec.imageInspection.maxGateAge; the gate was removed without changing the pod's affinity.
	PlacementGateAgeExceeded = "gate-age-exceeded"
)

// LabelFallbackArchitecture is set, to the architecture, on a pod placed on the
// ClusterPodPlacementConfig's fallbackArchitecture because inspecting its images failed for good.
const LabelFallbackArchitecture = "multiarch.openshift.io/fallback-arch"

// LabelPreferredArchitecture is the label a pod's owner sets to prefer one architecture for
// that pod: placement adds a preferred term of weight PreferredArchitectureWeight for it, ahead
// of every PodPlacementConfig and the ClusterPodPlacementConfig, when every image of the pod
// supports the architecture (otherwise the label is ignored, as a weight there could only pull
// the pod where it cannot run).
const LabelPreferredArchitecture = "multiarch.openshift.io/preferred-architecture"

// PreferredArchitectureWeight is the weight of the preferred term LabelPreferredArchitecture
// adds: the highest a preferred term can have.
const PreferredArchitectureWeight = 100

// LabelExecFormatError marks a pod one of whose containers failed with an exec format error
// (its binary is for another CPU architecture than its node's); the exec-format-error monitor
// sets it to LabelValueTrue, once, with a Warning Event. Select such pods with
// `kubectl get pods -A -l multiarch.openshift.io/exec-format-error=true`.
const LabelExecFormatError = "multiarch.openshift.io/exec-format-error"

// LabelValueTrue is the value of LabelExecFormatError and LabelAdmissionPolicy.
const LabelValueTrue = "true"

// Annotations written on pods by the pod placement controller, in the same write as the gate removal.
const (
	// AnnotationArchitectures holds the comma-separated, sorted set of architectures compatible with
	// every image of the pod, as found by inspection.
	AnnotationArchitectures = "multiarch.openshift.io/architectures"
	// AnnotationPreferredAffinitySource names the placement configuration whose preferred
	// weights were added to the pod ("PodPlacementConfig <namespace>/<name>", "PlacementRule
	// <name>" for a placement rule of the ClusterPodPlacementConfig, "ClusterPodPlacementConfig
	// cluster", or "label multiarch.openshift.io/preferred-architecture"); absent when none was. When several configurations
	// match a pod, the others are counted as skipped in the metrics, not recorded per pod.
	AnnotationPreferredAffinitySource = "multiarch.openshift.io/preferred-affinity-source"
	// AnnotationInspectionError holds a short reason why image inspection failed.
	AnnotationInspectionError = "multiarch.openshift.io/inspection-error"
	// AnnotationPlacementRules lists, comma-separated in the ClusterPodPlacementConfig's order,
	// the names of the placement rules (spec.placementRules) whose expression matched the pod;
	// absent when none did.
	AnnotationPlacementRules = "multiarch.openshift.io/placement-rules"
	// AnnotationAdmissionPlacement lists, comma-separated, the JSON pointers of what the webhook
	// added to the affinity and the tolerations of a pod it placed at admission. When the pod
	// comes back to the webhook (another mutating webhook changed it afterwards, its images for
	// example, or it is a copy of a placed pod), the webhook takes exactly those additions off
	// and decides again on the pod as it now is.
	AnnotationAdmissionPlacement = "multiarch.openshift.io/admission-placement"
	// AnnotationAdmissionPolicyPlacement is AnnotationAdmissionPlacement for a pod the admission
	// policy placed: the same JSON pointers. When another mutating webhook changes the pod
	// afterwards, the apiserver applies the policy again, which takes those additions off and
	// gates the pod for the controller. A key of its own keeps the webhook from being called
	// for the pods the policy placed.
	AnnotationAdmissionPolicyPlacement = "multiarch.openshift.io/admission-policy-placement"
)

// Architecture names, as in the kubernetes.io/arch node label and the OCI image index.
const (
	ArchitectureAMD64   = "amd64"
	ArchitectureARM64   = "arm64"
	ArchitecturePPC64LE = "ppc64le"
	ArchitectureS390X   = "s390x"
)

// SupportedArchitectures returns, in a new sorted slice, the architectures the operator
// recognises in configurations.
func SupportedArchitectures() []string {
	return []string{ArchitectureAMD64, ArchitectureARM64, ArchitecturePPC64LE, ArchitectureS390X}
}

// ReservedNamespacePrefixes returns, in a new slice, the prefixes of the namespaces whose pods are
// never gated, whatever the namespaceSelector says.
func ReservedNamespacePrefixes() []string {
	return []string{"kube-", "openshift-", "hypershift-"}
}

// IsReservedNamespace reports whether pods of the namespace are never gated: the kube-*,
// openshift-* and hypershift-* globs of the design (a namespace named exactly "openshift" does not
// match).
func IsReservedNamespace(namespace string) bool {
	for _, p := range ReservedNamespacePrefixes() {
		if strings.HasPrefix(namespace, p) {
			return true
		}
	}
	return false
}
