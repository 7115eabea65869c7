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

// Package admissionpolicy renders the MutatingAdmissionPolicy that places pods inside the
// apiserver: a pod whose images the controller has published (the params ConfigMap,
// knownimages.ImageParameters) gets,
// in CEL, what placement.Decide would write; any other pod gets the scheduling gate, as the
// webhook would add it. Either way the pod gets the policy's label (v1beta1.LabelAdmissionPolicy).
// The webhook stays registered and is called only for pods without it (its objectSelector, then
// webhook.PolicyHandledCondition), so a policy that fails, lacks its params or is not enforced
// leaves every pod to the webhook: the policy can never deny a pod.
//
// What CEL does not evaluate here is left to the controller by gating the pod (or, for a pod
// with the preferred-architecture label or one a placement rule matches, to the webhook): pods with
// imagePullSecrets (their images are read with their own credentials), pods of a namespace with
// PodPlacementConfigs (label selectors), images not published, images that share no
// architecture, and pods whose own preferred terms conflict with the cluster's weights (the
// controller records an Event for both).
//
// A pod the policy placed carries a record of it (undoExpression): when a later mutating webhook
// rewrites its images, the apiserver applies the policy again, which takes the placement off and
// gates the pod for the controller.
package admissionpolicy

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-openapi/jsonpointer"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/apidiscovery"
	"github.com/archgate/archgate/operator/internal/knownimages"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/webhook"
)

// Options describe the policy to render.
type Options struct {
	// Name of the MutatingAdmissionPolicy and of its binding.
	Name string
	// OperatorNamespace is never matched, as for the webhook; the params ConfigMap lives there.
	OperatorNamespace string
	// Parameters names the params ConfigMap; knownimages.DefaultParametersConfigMapName when
	// empty.
	Parameters string
	// Cluster is the ClusterPodPlacementConfig: its namespaceSelector, maxImagesPerPod and
	// cluster-level nodeAffinityScoring are compiled into the policy. The policy is rendered
	// only with admission placement on and local placement off (see Wanted).
	Cluster *v1beta1.ClusterPodPlacementConfig
}

// Policy returns the MutatingAdmissionPolicy.
func Policy(o Options) *admissionregistrationv1.MutatingAdmissionPolicy {
	spec := &o.Cluster.Spec
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: webhook.NamespaceSelector(spec.NamespaceSelector, o.OperatorNamespace),
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{corev1.GroupName}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
							Scope: ptr.To(admissionregistrationv1.NamespacedScope),
						},
					},
				}},
			},
			MatchConditions: matchConditions(spec),
			Variables:       variables(spec),
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: patchExpression(len(spec.ArchitectureTaints) > 0)},
			}},
			// A failing expression admits the pod unchanged and unlabelled: the webhook then
			// handles it.
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			// A pod the policy placed that a later mutating webhook changes (its images, for
			// example) comes back: the policy then takes its placement off and gates the pod
			// (undoExpression).
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
}

// Binding returns the MutatingAdmissionPolicyBinding that puts the policy in effect with the
// params ConfigMap. A missing params object makes the policy do nothing (the webhook then
// handles every pod).
func Binding(o Options) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: o.Name,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    cmp.Or(o.Parameters, knownimages.DefaultParametersConfigMapName),
				Namespace:               o.OperatorNamespace,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
			},
		},
	}
}

// Object writes a JSON object for a JSONPatch value as a CEL map literal of fields (name, CEL
// expression, in pairs), each value wrapped in dyn(): the apiserver's CEL wants the values of a
// literal to share one type, and an object's fields do not (strings, lists, numbers).
//
// Not the typed object initializers (Object.spec.affinity{...}) MutatingAdmissionPolicy offers:
// kube-apiserver (v1.37) converts those to JSON by converting every nested initializer again at
// each level above it, and once more to check their type names, which made the node affinity's
// conversion about a fifth of all it allocated to admit a placed pod (BenchmarkPolicyAdmission,
// heap profile). A map literal converts once. What the types checked, the apiserver checks when
// it decodes the patched pod (strictly: an unknown field fails the patch, which admits the pod
// unchanged for the webhook, failurePolicy Ignore), and the equivalence test compares every
// placement with placement.Decide's.
func Object(fields ...string) string {
	entries := make([]string, 0, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		entries = append(entries, fmt.Sprintf("%s: dyn(%s)", quote(fields[i]), fields[i+1]))
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// ImagesExpression lists the pod's distinct images as placement.PodImages does (trimmed, empty
// ones left out).
const ImagesExpression = `(object.spec.?initContainers.orValue([]).map(c, c.?image.orValue('').trim()) +
  object.spec.containers.map(c, c.?image.orValue('').trim())).filter(i, i != '').distinct()`

// matchConditions are the webhook's exemptions (webhook.exemptReason and the already-gated and
// too-many-images checks): the policy leaves those pods to the webhook, which counts them; and,
// with placement rules, the pods a rule matches (placementRulesCondition).
//
// A pod that carries the policy's record is matched whatever the others say: it was placed by
// the policy, and a later webhook changed it (or it is a copy of such a pod), so the policy
// takes its placement off. A pod that carries the webhook's record is the webhook's to undo.
//
// The apiserver evaluates every match condition of a policy for every pod, twice for each pod
// it places (reinvocationPolicy IfNeeded reinvokes after any mutation, the policy's own
// included), so the checks are one expression that reads what it needs in order: the record
// first, then either the images it was placed for or the exemptions.
func matchConditions(spec *v1beta1.ClusterPodPlacementConfigSpec) []admissionregistrationv1.MatchCondition {
	var exemptions []string
	for _, c := range webhook.ExemptionConditions() {
		exemptions = append(exemptions, c.Expression)
	}
	exemptions = append(exemptions,
		fmt.Sprintf(`!object.spec.?schedulingGates.orValue([]).exists(g, g.name == %s)`, quote(v1beta1.SchedulingGateName)),
		// The webhook weighs a pod's preferred-architecture label (placement.LabelSource); the
		// policy leaves the few pods that carry it to the webhook rather than compile the rule twice.
		fmt.Sprintf(`!(%s in object.metadata.?labels.orValue({}))`, quote(v1beta1.LabelPreferredArchitecture)),
		// Counting the containers first spares almost every pod the list of its images.
		fmt.Sprintf(`size(object.spec.containers) + size(object.spec.?initContainers.orValue([])) <= %[1]d || size(%[2]s) <= %[1]d`,
			spec.ImageInspection.Settings().MaxImagesPerPod, ImagesExpression),
	)
	// On the reinvocation that follows the policy's own change, the pods whose images are still
	// those their placement was decided for are skipped, at the cost of comparing two strings.
	imagesChanged := fmt.Sprintf(`size(%[1]s.split(';', 2)) < 2 || %[1]s.split(';', 2)[1] != %[2]s.join(',')`, recordValue, ImagesExpression)
	conditions := []admissionregistrationv1.MatchCondition{
		{Name: "not-in-reserved-namespace", Expression: webhook.ReservedNamespaceCondition()},
		{Name: "eligible-or-images-changed-since-placement", Expression: fmt.Sprintf(`!(%s in object.metadata.?annotations.orValue({})) &&
(%s ?
  %s :
  %s)`, quote(v1beta1.AnnotationAdmissionPlacement), recordedExpression(), imagesChanged, webhook.AllOf(exemptions...))},
	}
	if c, ok := placementRulesCondition(spec.PlacementRules); ok {
		c.Expression = recordedExpression() + " || (\n" + c.Expression + "\n)"
		conditions = append(conditions, c)
	}
	return conditions
}

// recordValue is the policy's record, read from a pod that carries it: "<paths>;<images>", the
// paths of what it added to the pod (as the webhook's record lists them) and the pod's images
// when it was placed, comma-separated.
const recordValue = "object.metadata.annotations[" + `"` + v1beta1.AnnotationAdmissionPolicyPlacement + `"` + "]"

// recordedExpression is true for a pod that carries the policy's record.
func recordedExpression() string {
	return fmt.Sprintf(`%s in object.metadata.?annotations.orValue({})`, quote(v1beta1.AnnotationAdmissionPolicyPlacement))
}

// placementRulesCondition leaves to the webhook every pod a placement rule matches: its
// condition is true when none does, !((rule 1) || (rule 2) || ...). The policy compiles the
// placement rules neither into its variables nor its patch: a matched pod is placed by the
// webhook (placement.Decide with the matched rules, placementrules), so the rules have one home.
// The expressions are the ones the validating webhook compiled as this policy's apiserver would
// (object is dyn in both). Each is closed on a line of its own, so that a trailing // comment
// cannot swallow the parenthesis.
//
// A rule that fails here does not place the pod wrongly: an error in a match condition (a
// missing field read without has(), the cost limit of the whole expression, which is one
// evaluation here and one per rule in the components) makes the apiserver skip the policy for
// that pod under failurePolicy Ignore, and true for another rule skips it anyway (CEL's || is
// true when either side is). Either way the webhook places the pod, or gates it for the
// controller to report the failure.
func placementRulesCondition(rules []v1beta1.PlacementRule) (admissionregistrationv1.MatchCondition, bool) {
	if len(rules) == 0 {
		return admissionregistrationv1.MatchCondition{}, false
	}
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = "(" + r.Expression + "\n)"
	}
	return admissionregistrationv1.MatchCondition{Name: "no-placement-rule-matches", Expression: "!(\n" + strings.Join(parts, " ||\n") + "\n)"}, true
}

// variables compute the decision; see placement.Decide for the rules they follow.
func variables(spec *v1beta1.ClusterPodPlacementConfigSpec) []admissionregistrationv1.Variable {
	archKey := quote(v1beta1.NodeArchLabel)
	weights, order := ClusterWeights(spec)
	vars := []struct{ name, expr string }{
		{"images", ImagesExpression},
		{"keys", fmt.Sprintf(`variables.images.map(i, %s)`, knownimages.ParameterKeyExpression("i"))},
		{"known", `params != null && variables.keys.all(k, k in params.?data.orValue({}))`},
		{"archLists", fmt.Sprintf(`variables.known ? variables.keys.map(k, params.data[k]).filter(v, v != %s).map(v, v.split(',')) : []`,
			quote(knownimages.AnyArchitecture))},
		{"anyArch", `size(variables.archLists) == 0`},
		{"archs", `variables.anyArch ? [] : variables.archLists[0].filter(a, variables.archLists.all(l, a in l))`},
		{"terms", `object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])`},
		{"needy", fmt.Sprintf(`variables.terms.map(t, (size(t.?matchExpressions.orValue([])) > 0 || size(t.?matchFields.orValue([])) > 0) &&
  !t.?matchExpressions.orValue([]).exists(e, e.key == %s))`, archKey)},
		{"pinned", `size(variables.terms) > 0 && !variables.needy.exists(n, n)`},
		{"prefersArch", fmt.Sprintf(`object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([]).exists(p,
  p.preference.?matchExpressions.orValue([]).exists(e, e.key == %s))`, archKey)},
		{"compatible", fmt.Sprintf(`variables.anyArch ? %s : variables.archs`, List(v1beta1.SupportedArchitectures()))},
		{"weights", weights},
		{"preferredArchs", fmt.Sprintf(`%s.filter(a, a in variables.compatible)`, List(order))},
		{"place", placeExpression()},
		{"outcome", fmt.Sprintf(`variables.pinned ? %s : (variables.anyArch ? %s : %s)`,
			quote(string(placement.OutcomeUserPinned)), quote(string(placement.OutcomeAnyArchitecture)), quote(string(placement.OutcomeArchSet)))},
		{"setRequired", `!variables.anyArch && !variables.pinned`},
		{"addPreferred", `!variables.prefersArch && size(variables.preferredArchs) > 0`},
	}
	tolerate := len(spec.ArchitectureTaints) > 0
	if tolerate {
		vars = append(vars, struct{ name, expr string }{"newTolerations", newTolerationsExpression(spec.ArchitectureTaints)})
	}
	vars = append(vars, struct{ name, expr string }{"record", recordExpression(tolerate)})
	out := make([]admissionregistrationv1.Variable, 0, len(vars))
	for _, v := range vars {
		out = append(out, admissionregistrationv1.Variable{Name: v.name, Expression: v.expr})
	}
	return out
}

// newTolerationsExpression lists, as maps, the tolerations of the architecture taints that
// placement.AddArchitectureTolerations would add: the taints of the architectures the pod is
// placed on (not a user-pinned pod's) that no toleration of the pod tolerates yet, decided as
// corev1.Toleration.ToleratesTaint does (an empty effect or key matches any, Exists any value).
func newTolerationsExpression(taints []v1beta1.ArchitectureTaint) string {
	entries := make([]string, 0, len(taints))
	for _, t := range taints {
		taint := t.Taint()
		entries = append(entries, fmt.Sprintf("{'arch': %s, 'key': %s, 'value': %s, 'effect': %s}",
			quote(t.Architecture), quote(taint.Key), quote(taint.Value), quote(string(taint.Effect))))
	}
	return fmt.Sprintf(`variables.pinned ? [] : [%s].filter(t, t.arch in variables.compatible &&
  !object.spec.?tolerations.orValue([]).exists(u,
    (u.?effect.orValue('') == '' || u.effect == t.effect) && (u.?key.orValue('') == '' || u.key == t.key) &&
    (u.?operator.orValue('') == 'Exists' || (u.?operator.orValue('') in ['', 'Equal'] && u.?value.orValue('') == t.value))))`,
		strings.Join(entries, ", "))
}

// placeExpression is true when the pod can be placed here; otherwise it is gated for the
// controller, as the webhook gates it (placeAtAdmission).
func placeExpression() string {
	return fmt.Sprintf(`variables.known &&
  size(object.spec.?imagePullSecrets.orValue([])) == 0 &&
  !(%s in params.data) &&
  (variables.anyArch || size(variables.archs) > 0) &&
  !(variables.prefersArch && size(variables.preferredArchs) > 0)`, quote(knownimages.NamespaceKey(""))+" + namespaceObject.metadata.name")
}

// ClusterWeights returns the cluster-level weights as a CEL map from architecture to weight, and
// the architectures in the order they are applied. Entries placement.MergePreferredArchitectures
// would skip whatever the pod (invalid weights, repeated architectures) are left out here.
func ClusterWeights(spec *v1beta1.ClusterPodPlacementConfigSpec) (string, []string) {
	var entries, order []string
	if spec.Plugins.NodeAffinityScoringEnabled() {
		for _, p := range spec.Plugins.NodeAffinityScoring.Platforms {
			if p.Weight < 1 || p.Weight > 100 || slices.Contains(order, p.Architecture) {
				continue
			}
			order = append(order, p.Architecture)
			entries = append(entries, fmt.Sprintf("%s: %d", quote(p.Architecture), p.Weight))
		}
	}
	if len(entries) == 0 {
		return "{'': 0}", nil // a typed empty map(string, int)
	}
	return "{" + strings.Join(entries, ", ") + "}", order
}

// patchExpression returns the JSONPatch expression: the placement, or the gate; for a pod that
// carries the policy's record, the undoing. tolerate adds the tolerations of the architecture
// taints (the newTolerations variable).
func patchExpression(tolerate bool) string {
	gate := gatePatch()
	place := placePatch(tolerate)
	if tolerate {
		place += " + " + tolerationsPatch()
	}
	return recordedExpression() + " ? " + undoExpression(gate) + " :\n!variables.place ? " + gate + " : " + place
}

// gatePatch adds the scheduling gate, the gated label and the policy's label.
func gatePatch() string {
	gateName := quote(v1beta1.SchedulingGateName)
	return MapsPatch("labels", map[string]string{v1beta1.LabelSchedulingGate: quote(v1beta1.LabelValueGated), v1beta1.LabelAdmissionPolicy: quote(v1beta1.LabelValueTrue)}) + ` + [
    size(object.spec.?schedulingGates.orValue([])) > 0 ?
      JSONPatch{op: 'add', path: '/spec/schedulingGates/-', value: {'name': ` + gateName + `}} :
      JSONPatch{op: 'add', path: '/spec/schedulingGates', value: [{'name': ` + gateName + `}]}
  ]`
}

// undoExpression takes the policy's placement off a pod that comes back changed, as the webhook
// takes its own off: the recorded node affinity parts and tolerations removed, last first, an
// affinity the policy added whole pruned when nothing else is left in it, and the placement
// labels and annotations removed. Then gate gates the pod, and the controller decides on the pod
// as it now is. (The webhook decides again itself; the policy cannot, since one mutation reads
// the pod as it was, and a second one would cost every pod a patch of its own.) A pod that is
// now exempt (its nodeSelector pins the architecture, say) is only undone, the policy's label
// removed too, so that the webhook sees it as it would without the policy. A record that names
// anything but the node affinity and the tolerations changes nothing; one that does not fit the
// pod fails the patch, which admits the pod as it is (failurePolicy Ignore).
func undoExpression(gate string) string {
	record := recordValue + ".split(';', 2)[0]"
	paths := "(" + record + " == '' ? [] : " + record + ".split(','))"
	valid := fmt.Sprintf(`size(%[1]s) <= %[2]d && %[1]s.all(p, p == '/spec/affinity' || p.startsWith('/spec/affinity/nodeAffinity') || p.startsWith('/spec/tolerations/'))`,
		paths, webhook.MaxRecordedPaths)
	removals := fmt.Sprintf(`%[1]s.reverse().map(p, JSONPatch{op: 'remove', path: p == '/spec/affinity' ? '/spec/affinity/nodeAffinity' : p}) +
    ('/spec/affinity' in %[1]s && !object.spec.?affinity.?podAffinity.hasValue() && !object.spec.?affinity.?podAntiAffinity.hasValue() ?
      [JSONPatch{op: 'remove', path: '/spec/affinity'}] : [])`, paths)
	annotations := removeEntries("annotations", webhook.PlacementAnnotations()...)
	var exempt []string
	for _, c := range webhook.ExemptionConditions() {
		exempt = append(exempt, "("+c.Expression+")")
	}
	return fmt.Sprintf(`(object.metadata.?labels.orValue({})[?%[1]s].orValue('') != %[2]s || !(%[3]s) ? [] :
  %[4]s + %[5]s +
  (%[6]s ? %[7]s + %[8]s : %[9]s))`,
		quote(v1beta1.LabelSchedulingGate), quote(v1beta1.LabelValueAdmission), valid,
		removals, annotations,
		strings.Join(exempt, " && "), removeEntries("labels", v1beta1.LabelPlacement), gate,
		removeEntries("labels", v1beta1.LabelSchedulingGate, v1beta1.LabelPlacement, v1beta1.LabelAdmissionPolicy))
}

// removeEntries removes the keys that metadata.<field> holds, by their metadataPath.
func removeEntries(field string, keys ...string) string {
	ops := make([]string, len(keys))
	for i, k := range keys {
		ops[i] = fmt.Sprintf("(%s in object.metadata.%s ? [JSONPatch{op: 'remove', path: %s}] : [])",
			quote(k), field, quote(metadataPath(field, k)))
	}
	return fmt.Sprintf("(has(object.metadata.%s) ? %s : [])", field, strings.Join(ops, " + "))
}

// tolerationsPatch appends the new tolerations to the pod's, or adds the list.
func tolerationsPatch() string {
	toleration := Object("key", "t.key", "operator", "'Equal'", "value", "t.value", "effect", "t.effect")
	return fmt.Sprintf(`(size(variables.newTolerations) == 0 ? [] :
    has(object.spec.tolerations) ?
      variables.newTolerations.map(t, JSONPatch{op: 'add', path: '/spec/tolerations/-', value: %[1]s}) :
      [JSONPatch{op: 'add', path: '/spec/tolerations', value: variables.newTolerations.map(t, %[1]s)}])`, toleration)
}

// placePatch sets the labels, the annotations (with the record, variables.record) and the node
// affinity of a placed pod. tolerate: the tolerations are added too (tolerationsPatch).
func placePatch(tolerate bool) string {
	labels := MapsPatch("labels", map[string]string{
		v1beta1.LabelSchedulingGate:  quote(v1beta1.LabelValueAdmission),
		v1beta1.LabelPlacement:       "variables.outcome",
		v1beta1.LabelAdmissionPolicy: quote(v1beta1.LabelValueTrue),
	})
	annotations := map[string]string{
		v1beta1.AnnotationArchitectures:            `(variables.anyArch ? '*' : variables.archs.join(','))`,
		v1beta1.AnnotationAdmissionPolicyPlacement: "variables.record",
	}
	withSource := maps.Clone(annotations)
	withSource[v1beta1.AnnotationPreferredAffinitySource] = quote(placement.SourceRef{Kind: placement.KindClusterPodPlacementConfig, Name: v1beta1.SingletonName}.String())
	return labels + " + (variables.addPreferred ? " + MapsPatch("annotations", withSource) + " : " + MapsPatch("annotations", annotations) + ") + " + affinityPatch()
}

// recordExpression is the value of the policy's record (recordValue; the variable record): the
// paths of what tolerationsPatch and affinityPatch add, as the webhook records its own (each
// toleration and each appended entry with its index), and the images the placement is for.
func recordExpression(tolerate bool) string {
	const na = "/spec/affinity/nodeAffinity"
	const required = na + "/requiredDuringSchedulingIgnoredDuringExecution"
	const preferred = na + "/preferredDuringSchedulingIgnoredDuringExecution"
	requiredPaths := fmt.Sprintf(`(!variables.setRequired ? [] :
    !has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) ? ['%[1]s'] :
    size(variables.terms) == 0 ? ['%[1]s/nodeSelectorTerms/0'] :
    lists.range(size(variables.terms)).filter(i, variables.needy[i]).map(i,
      has(variables.terms[i].matchExpressions) ?
        '%[1]s/nodeSelectorTerms/' + string(i) + '/matchExpressions/' + string(size(variables.terms[i].matchExpressions)) :
        '%[1]s/nodeSelectorTerms/' + string(i) + '/matchExpressions'))`, required)
	preferredPaths := fmt.Sprintf(`(!variables.addPreferred ? [] :
    has(object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) ?
      lists.range(size(variables.preferredArchs)).map(j,
        '%[1]s/' + string(size(object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) + j)) :
      ['%[1]s'])`, preferred)
	paths := fmt.Sprintf(`(!(variables.setRequired || variables.addPreferred) ? [] :
  !has(object.spec.affinity) ? ['/spec/affinity'] :
  !has(object.spec.affinity.nodeAffinity) ? ['%s'] :
  %s + %s)`, na, requiredPaths, preferredPaths)
	if tolerate {
		paths = `lists.range(size(variables.newTolerations)).map(j, '/spec/tolerations/' + string(size(object.spec.?tolerations.orValue([])) + j)) + ` + paths
	}
	return "(" + paths + ").join(',') + ';' + variables.images.join(',')"
}

// affinityPatch adds the node affinity's new parts and nothing else: the user's terms are never
// rewritten (values read from the pod cannot be written back by a JSONPatch expression, and
// adding only what is new keeps the patch as small as the webhook's). The requirement is
// appended to each term that needs it, the preferred terms to the end of the list; a missing
// affinity, nodeAffinity, required selector or list is added whole.
func affinityPatch() string {
	archKey := quote(v1beta1.NodeArchLabel)
	requirement := NodeSelectorRequirement(archKey, "variables.archs")
	newTerms := fmt.Sprintf(`[%s]`, Object("matchExpressions", "["+requirement+"]"))
	newRequired := Object("nodeSelectorTerms", newTerms)
	newPreferred := fmt.Sprintf(`variables.preferredArchs.map(a, %s)`,
		PreferredTerm("variables.weights[a]", NodeSelectorRequirement(archKey, "[a]")))
	newNodeAffinity := fmt.Sprintf(`{
    ?'requiredDuringSchedulingIgnoredDuringExecution': variables.setRequired ? optional.of(dyn(%s)) : optional.none(),
    ?'preferredDuringSchedulingIgnoredDuringExecution': variables.addPreferred ? optional.of(dyn(%s)) : optional.none()}`,
		newRequired, newPreferred)
	const na = "/spec/affinity/nodeAffinity"
	const required = na + "/requiredDuringSchedulingIgnoredDuringExecution"
	const preferred = na + "/preferredDuringSchedulingIgnoredDuringExecution"
	requiredOps := fmt.Sprintf(`(!variables.setRequired ? [] :
    !has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) ?
      [JSONPatch{op: 'add', path: '%[1]s', value: %[2]s}] :
    size(variables.terms) == 0 ? [JSONPatch{op: 'add', path: '%[1]s/nodeSelectorTerms', value: %[3]s}] :
    lists.range(size(variables.terms)).filter(i, variables.needy[i]).map(i,
      has(variables.terms[i].matchExpressions) ?
        JSONPatch{op: 'add', path: '%[1]s/nodeSelectorTerms/' + string(i) + '/matchExpressions/-', value: %[4]s} :
        JSONPatch{op: 'add', path: '%[1]s/nodeSelectorTerms/' + string(i) + '/matchExpressions', value: [%[4]s]}))`,
		required, newRequired, newTerms, requirement)
	preferredOps := fmt.Sprintf(`(!variables.addPreferred ? [] :
    has(object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) ?
      %[2]s.map(p, JSONPatch{op: 'add', path: '%[1]s/-', value: p}) :
      [JSONPatch{op: 'add', path: '%[1]s', value: %[2]s}])`, preferred, newPreferred)
	return fmt.Sprintf(`(!(variables.setRequired || variables.addPreferred) ? [] :
  !has(object.spec.affinity) ? [JSONPatch{op: 'add', path: '/spec/affinity', value: %s}] :
  !has(object.spec.affinity.nodeAffinity) ? [JSONPatch{op: 'add', path: '%s', value: %s}] :
  %s + %s)`, Object("nodeAffinity", newNodeAffinity), na, newNodeAffinity, requiredOps, preferredOps)
}

// NodeSelectorRequirement is the requirement "key In values" (CEL expressions) as a JSONPatch
// value (Object).
func NodeSelectorRequirement(key, values string) string {
	return Object("key", key, "operator", quote(string(corev1.NodeSelectorOpIn)), "values", values)
}

// PreferredTerm is a preferred scheduling term of weight with one requirement (CEL
// expressions) as a JSONPatch value (Object).
func PreferredTerm(weight, requirement string) string {
	return Object("weight", weight, "preference", Object("matchExpressions", "["+requirement+"]"))
}

// MapsPatch sets entries (values are CEL expressions) in metadata.<field>: the whole map when the
// pod has none, otherwise one operation per entry. The keys are escaped here and each value
// appears once in either branch, rather than a CEL map read once per key with its keys escaped
// in CEL, which the apiserver would build and escape again for every pod
// (BenchmarkPolicyAdmission, a placed pod with labels and annotations: 426 KiB allocated in the
// apiserver before, 418 after).
func MapsPatch(field string, entries map[string]string) string {
	keys := slices.Sorted(maps.Keys(entries))
	ops := make([]string, len(keys))
	literal := make([]string, len(keys))
	for i, k := range keys {
		ops[i] = fmt.Sprintf("JSONPatch{op: 'add', path: %s, value: %s}", quote(metadataPath(field, k)), entries[k])
		literal[i] = quote(k) + ": " + entries[k]
	}
	return fmt.Sprintf(`(has(object.metadata.%s) ?
    [%s] :
    [JSONPatch{op: 'add', path: '/metadata/%s', value: {%s}}])`, field, strings.Join(ops, ",\n     "), field, strings.Join(literal, ", "))
}

// metadataPath is the JSON pointer to key in metadata.<field>, escaped once here rather than
// by CEL for every pod (MapsPatch, removeEntries).
func metadataPath(field, key string) string {
	return "/metadata/" + field + "/" + jsonpointer.Escape(key)
}

// quote returns s as a CEL string literal.
func quote(s string) string { return fmt.Sprintf("%q", s) }

// List returns ss as a CEL list of string literals.
func List(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Wanted reports whether the ClusterPodPlacementConfig spec asks for the policy and, when it
// does not, why (for the status).
func Wanted(spec *v1beta1.ClusterPodPlacementConfigSpec) (bool, string) {
	switch {
	case !spec.AdmissionPolicyEnabled():
		return false, "spec.admissionPolicy is Disabled (the default): the webhook places pods at admission"
	case spec.OperatingSystemPlacementEnabled():
		return false, "spec.operatingSystemPlacement is Enabled: the controller places every pod by operating system and architecture"
	case !spec.AdmissionPlacementEnabled():
		return false, "spec.admissionPlacement is Disabled: the webhook gates every pod"
	case spec.LocalPlacementEnabled():
		return false, "spec.localPlacement is Enabled: the namespaces' webhooks, which run after any policy, must see the pods first"
	}
	return true, ""
}

// Served reports whether the apiserver behind mapper serves admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy (which says nothing of whether it applies policies: see the probe).
func Served(mapper meta.RESTMapper) (bool, error) {
	return apidiscovery.Served(mapper, admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"))
}
