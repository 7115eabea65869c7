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

package webhook

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// How the scheduling-gate webhook is registered with the apiserver.
const (
	// Path is the HTTP path the scheduling-gate webhook serves.
	Path = "/gate-pods"
	// ConfigurationEntryName is the name of the webhook entry inside the
	// MutatingWebhookConfiguration (not the name of a Deployment or of the configuration).
	ConfigurationEntryName = "scheduling-gate.multiarch.openshift.io"
	// TimeoutSeconds is how long the apiserver waits for the webhook. The handler decides in
	// microseconds; a slow answer means the webhook is unhealthy, and with failurePolicy Ignore
	// the pod is then admitted ungated rather than delaying every pod creation.
	TimeoutSeconds = 5
	// metadataNameLabel is the label the apiserver sets on every namespace to its name.
	metadataNameLabel = "kubernetes.io/metadata.name"
)

// ConfigurationOptions describe the MutatingWebhookConfiguration to build.
type ConfigurationOptions struct {
	// Name of the MutatingWebhookConfiguration.
	Name string
	// ClientConfig locates the webhook: a Service (the operator) or a URL (the simulator).
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// CABundle verifies the webhook's serving certificate; when empty, ClientConfig's is kept
	// (or an external provider injects it).
	CABundle []byte
	// NamespaceSelector is the ClusterPodPlacementConfig's selector (nil selects every namespace).
	NamespaceSelector *metav1.LabelSelector
	// OperatorNamespace is the namespace the operator runs in; its pods are never sent.
	OperatorNamespace string
	// EntryName names the webhook entry; ConfigurationEntryName when empty. Path is the path a
	// Service client config gets; Path (the constant) when empty. A namespace's local webhook
	// sets both (LocalEntryName, LocalPath).
	EntryName, Path string
	// PolicyInEffect skips the pods the admission policy labelled (placed or gated), by the
	// objectSelector and a match condition: the apiserver then calls the webhook only for the
	// pods the policy left alone.
	PolicyInEffect bool
}

// LocalEntryName is the name of the webhook entry of namespace's local webhook: one entry per
// namespace, all in one MutatingWebhookConfiguration.
func LocalEntryName(namespace string) string {
	return namespace + ".local-scheduling-gate.multiarch.openshift.io"
}

// Configuration returns the MutatingWebhookConfiguration that registers the scheduling-gate
// webhook with the apiserver, named o.Name:
//
//   - pods, CREATE only, failurePolicy Ignore (a webhook outage admits pods ungated, it never
//     blocks them), sideEffects None, timeoutSeconds WebhookTimeoutSeconds, reinvocation
//     IfNeeded: a pod that a later mutating webhook changes comes back, and a placement made at
//     admission is made again for the pod as it then is (undo.go);
//   - clientConfig is a Service or a URL; a Service without a path gets Path; CABundle,
//     when not empty, replaces clientConfig.caBundle;
//   - namespaceSelector is the user's selector (nil selects every namespace) ANDed with
//     "kubernetes.io/metadata.name NotIn [OperatorNamespace, kube-system, kube-public,
//     kube-node-lease]". Label selectors cannot match name prefixes, so the kube-*,
//     openshift-* and hypershift-* globs are excluded by a CEL match condition instead: the
//     apiserver does not even call the webhook for them (the handler checks again).
func Configuration(o ConfigurationOptions) *admissionregistrationv1.MutatingWebhookConfiguration {
	cc := *o.ClientConfig.DeepCopy()
	if len(o.CABundle) > 0 {
		cc.CABundle = slices.Clone(o.CABundle)
	}
	if cc.Service != nil && cc.Service.Path == nil {
		cc.Service.Path = ptr.To(cmp.Or(o.Path, Path))
	}

	selector := NamespaceSelector(o.NamespaceSelector, o.OperatorNamespace)

	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         cmp.Or(o.EntryName, ConfigurationEntryName),
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{corev1.GroupName},
					APIVersions: []string{"v1"},
					Resources:   []string{"pods"},
					Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       selector,
			ObjectSelector:          objectSelector(o.PolicyInEffect),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			MatchConditions:         matchConditions(o.PolicyInEffect),
		}},
	}
}

// objectSelector selects every pod, or, with the policy in effect, those without the policy's
// label. The apiserver checks it before the match conditions, and only a match condition can
// tell a pod the policy labelled from a copy of one the webhook placed (PolicyHandledCondition):
// evaluating one for every pod costs the apiserver the pod's conversion to CEL (20 KiB
// allocated per pod in 10k-pods-policy), for a webhook the policy leaves almost no pod to.
func objectSelector(policyInEffect bool) *metav1.LabelSelector {
	if !policyInEffect {
		return &metav1.LabelSelector{}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: v1beta1.LabelAdmissionPolicy, Operator: metav1.LabelSelectorOpNotIn, Values: []string{v1beta1.LabelValueTrue},
	}}}
}

func matchConditions(policyInEffect bool) []admissionregistrationv1.MatchCondition {
	conditions := []admissionregistrationv1.MatchCondition{{Name: "not-in-reserved-namespace", Expression: ReservedNamespaceCondition()}}
	if policyInEffect {
		// The apiserver then calls the webhook only for the pods the policy left alone and that
		// the webhook does more than count: the exempt ones it would only count are left out.
		// One expression, the policy's label read first: the apiserver evaluates every match
		// condition of a webhook for every pod, and almost every pod is one the policy handled,
		// so the exemptions are read only for the few it left.
		exprs := []string{PolicyHandledCondition()}
		for _, c := range ExemptionConditions() {
			exprs = append(exprs, c.Expression)
		}
		conditions = append(conditions, admissionregistrationv1.MatchCondition{
			Name: "not-handled-by-admission-policy", Expression: AllOf(exprs...),
		})
	}
	return conditions
}

// AllOf joins CEL boolean expressions with &&, each in parentheses on lines of their own (a
// trailing // comment cannot swallow the closing one). CEL's && is false when either side is,
// whatever error the other raises, so the join is false exactly when a condition of its own
// would be, and fails only where they would have failed with none false.
func AllOf(exprs ...string) string {
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = "(" + e + "\n)"
	}
	return strings.Join(parts, " &&\n")
}

// ExemptionConditions are CEL match conditions that are false for the pods exemptReason exempts:
// the scheduler is bypassed, a DaemonSet owns the pod, or its nodeSelector pins the architecture.
func ExemptionConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		{Name: "scheduler-not-bypassed", Expression: `object.spec.?nodeName.orValue('') == ''`},
		{Name: "not-a-daemonset-pod", Expression: `!object.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'DaemonSet')`},
		{Name: "architecture-not-pinned-by-node-selector", Expression: fmt.Sprintf(`!(%q in object.spec.?nodeSelector.orValue({}))`, v1beta1.NodeArchLabel)},
	}
}

// PolicyHandledCondition is the CEL expression that is false for a pod the admission policy
// labelled: it carries the scheduling-gate label (gated, or placed at admission) without the
// admission-placement record the webhook writes. A pod the webhook placed thus comes back to it
// when a later webhook changes it (the apiserver evaluates match conditions again on
// reinvocation). Most such pods never reach it: the objectSelector (objectSelector) leaves out
// those with the policy's label first; it answers for the others.
func PolicyHandledCondition() string {
	return fmt.Sprintf("!has(object.metadata.labels) || !(%q in object.metadata.labels) || %q in object.metadata.?annotations.orValue({})",
		v1beta1.LabelSchedulingGate, v1beta1.AnnotationAdmissionPlacement)
}

// NamespaceSelector returns the namespaces archgate acts in: selector (nil selects every
// namespace) ANDed with "kubernetes.io/metadata.name NotIn [operatorNamespace, kube-system,
// kube-public, kube-node-lease]". The webhook and the admission policy share it.
func NamespaceSelector(selector *metav1.LabelSelector, operatorNamespace string) *metav1.LabelSelector {
	out := selector.DeepCopy()
	if out == nil {
		out = &metav1.LabelSelector{}
	}
	excluded := []string{"kube-node-lease", "kube-public", "kube-system"}
	if operatorNamespace != "" && !slices.Contains(excluded, operatorNamespace) {
		excluded = append(excluded, operatorNamespace)
		slices.Sort(excluded)
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: metadataNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: excluded,
	})
	return out
}

// ReservedNamespaceCondition is the CEL expression that is false for the reserved namespace
// prefixes: !(request.namespace.startsWith('kube-') || ...).
func ReservedNamespaceCondition() string {
	var terms []string
	for _, p := range v1beta1.ReservedNamespacePrefixes() {
		terms = append(terms, fmt.Sprintf("request.namespace.startsWith('%s')", p))
	}
	return "!(" + strings.Join(terms, " || ") + ")"
}
