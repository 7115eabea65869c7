// Package floorpolicy is the cheapest MutatingAdmissionPolicy that places pods by
// architecture: each pod arrives carrying its own answer (the architectures its images run
// on, from the scenario's catalog, in the annotation workload.AnswerAnnotation), and the
// policy only turns that answer into the required node affinity a user would write and takes
// the annotation off again, so that the stored pod is the one the handwritten pass creates.
// It is registered as archgate's policy is (the same match constraints, match conditions,
// failure and reinvocation policy: components.AdmissionPolicy) but has no params and no
// variables. A pass through it measures what any admission-policy design pays in the
// apiserver (matching, one CEL evaluation, the JSON patch, the reinvocation) apart from the
// work archgate's policy does to find the answer (its params lookups and decision rules).
//
// With Options.Placement it writes, from the same answer, the whole placement archgate's policy
// writes on a pod it places: the preferred terms of the cluster's nodeAffinityScoring besides
// the required affinity, and archgate's labels and annotations, computing the preferred terms
// once per pod in a variable as archgate's policy does. A pass through it then
// measures what any admission policy pays to write archgate's placement, apart from finding it.
package floorpolicy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"

	"github.com/archgate/archgate/simulator/internal/workload"
)

// Label marks every pod the floor policy admitted (LabelValue), so that a dry run shows
// whether the apiserver applies it.
const (
	Label      = "sim.archgate.io/floor-policy"
	LabelValue = "admitted"
)

// name names the policy and its binding.
const name = "archgate-simulator-floor-policy"

// Options are what the policy is rendered from.
type Options struct {
	// OperatorNamespace is never matched, as for archgate's policy.
	OperatorNamespace string
	// Cluster is the ClusterPodPlacementConfig whose scope (namespaceSelector, exemptions,
	// maxImagesPerPod) the policy's match conditions take, as archgate's do, and with
	// Placement whose nodeAffinityScoring weights it writes; nil takes the defaults.
	Cluster *v1beta1.ClusterPodPlacementConfig
	// Placement writes archgate's whole placement of a placed pod, not only the required
	// affinity (placementExpression).
	Placement bool
}

// Policy returns the floor policy and its binding: archgate's registration with the floor's
// mutation in place of archgate's params, variables and patch.
func Policy(o Options) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	cluster := o.Cluster
	if cluster == nil {
		cluster = &v1beta1.ClusterPodPlacementConfig{}
	}
	policy, binding := components.AdmissionPolicy(components.AdmissionPolicyOptions{
		Name: name, OperatorNamespace: o.OperatorNamespace, Cluster: cluster,
	})
	policy.Spec.ParamKind = nil
	policy.Spec.Variables = nil
	expression := PatchExpression
	if o.Placement {
		expression = placementExpression(&cluster.Spec)
		policy.Spec.Variables = []admissionregistrationv1.Variable{preferredVariable(&cluster.Spec)}
	}
	policy.Spec.Mutations = []admissionregistrationv1.Mutation{{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expression},
	}}
	binding.Spec.ParamRef = nil
	return policy, binding
}

// PatchExpression labels a pod the policy has not labelled yet and, when it carries its
// answer, sets the required affinity from it and removes the answer: In the listed
// architectures, or DoesNotExist when the list is empty (its images share none), as
// workload.Pod.HandwrittenAffinity writes it. A pod that carries an answer has no affinity of
// its own (workload.ObjectOptions.HandwrittenAnswer).
var PatchExpression = fmt.Sprintf(`%[1]s in object.metadata.?labels.orValue({}) ? [] :
  [has(object.metadata.labels) ?
    JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey(%[1]s), value: %[2]s} :
    JSONPatch{op: 'add', path: '/metadata/labels', value: {%[1]s: %[2]s}}] +
  (!(%[3]s in object.metadata.?annotations.orValue({})) ? [] : [
    JSONPatch{op: 'add', path: '/spec/affinity', value: %[4]s},
    JSONPatch{op: 'remove', path: '/metadata/annotations/' + jsonpatch.escapeKey(%[3]s)}])`,
	strconv.Quote(Label), strconv.Quote(LabelValue), strconv.Quote(workload.AnswerAnnotation),
	components.AdmissionPolicyObject("nodeAffinity", components.AdmissionPolicyObject("requiredDuringSchedulingIgnoredDuringExecution", requiredAffinity)))

// requiredAffinity is the required node affinity of a pod's answer: In the listed
// architectures, or DoesNotExist when the list is empty. It and the floor's other values are
// written as archgate's policy writes them (components.AdmissionPolicyObject), so that both pay
// the same for the encoding.
var requiredAffinity = components.AdmissionPolicyObject("nodeSelectorTerms", fmt.Sprintf(`[%s]`,
	components.AdmissionPolicyObject("matchExpressions", fmt.Sprintf(`[%[1]s == '' ? %[2]s : %[3]s]`,
		answer,
		components.AdmissionPolicyObject("key", strconv.Quote(corev1.LabelArchStable), "operator", strconv.Quote(string(corev1.NodeSelectorOpDoesNotExist))),
		components.AdmissionPolicyRequirement(strconv.Quote(corev1.LabelArchStable), answer+".split(',')")))))

// answer is the pod's answer, the architectures its images share, comma-separated.
var answer = "object.metadata.annotations[" + strconv.Quote(workload.AnswerAnnotation) + "]"

// placementExpression is PatchExpression writing archgate's whole placement, as its policy
// writes it on a pod it places: besides the floor's label, archgate's admission labels; the
// architectures, its record (the path it added and the pod's images) and, with preferred terms,
// their source as annotations; and the node affinity with the cluster's preferred terms for the
// answer's architectures, in the cluster's order. A pod whose images share no architecture
// (which archgate gates for its controller) gets the same with DoesNotExist.
func placementExpression(spec *v1beta1.ClusterPodPlacementConfigSpec) string {
	images := components.AdmissionPolicyImagesExpression + ".join(',')"
	labels := components.AdmissionPolicyMapsPatch("labels", map[string]string{
		Label:                        strconv.Quote(LabelValue),
		v1beta1.LabelSchedulingGate:  strconv.Quote(v1beta1.LabelValueAdmission),
		v1beta1.LabelPlacement:       strconv.Quote(v1beta1.PlacementArchSet),
		v1beta1.LabelAdmissionPolicy: strconv.Quote(v1beta1.LabelValueTrue),
	})
	// string(): the map literal MapsPatch writes for a pod without annotations needs its
	// values typed, and CEL types an entry read from the pod as dyn.
	annotations := map[string]string{
		v1beta1.AnnotationArchitectures:            "string(" + answer + ")",
		v1beta1.AnnotationAdmissionPolicyPlacement: "'/spec/affinity;' + " + images,
	}
	withSource := maps.Clone(annotations)
	withSource[v1beta1.AnnotationPreferredAffinitySource] = strconv.Quote("ClusterPodPlacementConfig " + v1beta1.SingletonName)
	return fmt.Sprintf(`%[1]s in object.metadata.?labels.orValue({}) ? [] :
  %[2]s +
  (!(%[3]s in object.metadata.?annotations.orValue({})) ? [] :
    (size(variables.preferred) == 0 ? %[4]s : %[5]s) + [
    JSONPatch{op: 'add', path: '/spec/affinity', value: {'nodeAffinity': {
      'requiredDuringSchedulingIgnoredDuringExecution': dyn(%[6]s),
      ?'preferredDuringSchedulingIgnoredDuringExecution': size(variables.preferred) == 0 ? optional.none() : optional.of(dyn(variables.preferred))}}},
    JSONPatch{op: 'remove', path: '/metadata/annotations/' + jsonpatch.escapeKey(%[3]s)}])`,
		strconv.Quote(Label), labels, strconv.Quote(workload.AnswerAnnotation),
		components.AdmissionPolicyMapsPatch("annotations", annotations),
		components.AdmissionPolicyMapsPatch("annotations", withSource), requiredAffinity)
}

// preferredVariable is the placement floor's one variable, preferred: the preferred terms of
// the cluster's nodeAffinityScoring for the answer's architectures, in the cluster's order,
// computed once per pod as archgate's policy computes its own.
func preferredVariable(spec *v1beta1.ClusterPodPlacementConfigSpec) admissionregistrationv1.Variable {
	weights, order := components.AdmissionPolicyWeights(spec)
	return admissionregistrationv1.Variable{Name: "preferred", Expression: fmt.Sprintf(`%[1]s == '' ? [] : %[2]s.filter(a, a in %[1]s.split(',')).map(a, %[3]s)`,
		answer, order, components.AdmissionPolicyPreferredTerm(weights+"[a]", components.AdmissionPolicyRequirement(strconv.Quote(corev1.LabelArchStable), "[a]")))}
}

// Register creates the policy and its binding; the caller waits until the apiserver applies it
// (a dry run labelled with Label) and calls the returned unregister, which deletes them.
func Register(ctx context.Context, crc crclient.Client, o Options) (unregister func(context.Context) error, err error) {
	policy, binding := Policy(o)
	if err := crc.Create(ctx, policy); err != nil {
		return nil, fmt.Errorf("registering the floor policy %s: %w", policy.Name, err)
	}
	if err := crc.Create(ctx, binding); err != nil {
		return nil, errors.Join(fmt.Errorf("registering the floor policy binding %s: %w", binding.Name, err),
			crclient.IgnoreNotFound(crc.Delete(ctx, policy)))
	}
	return func(ctx context.Context) error {
		if err := crclient.IgnoreNotFound(crc.Delete(ctx, binding)); err != nil {
			return err
		}
		return crclient.IgnoreNotFound(crc.Delete(ctx, policy))
	}, nil
}
