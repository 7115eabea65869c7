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
package floorpolicy

import (
	"context"
	"errors"
	"fmt"
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
	// maxImagesPerPod) the policy's match conditions take, as archgate's do; nil takes the
	// defaults.
	Cluster *v1beta1.ClusterPodPlacementConfig
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
	policy.Spec.Mutations = []admissionregistrationv1.Mutation{{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: PatchExpression},
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
    JSONPatch{op: 'add', path: '/spec/affinity', value: Object.spec.affinity{
      nodeAffinity: Object.spec.affinity.nodeAffinity{
        requiredDuringSchedulingIgnoredDuringExecution: Object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution{
          nodeSelectorTerms: [Object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms{
            matchExpressions: [object.metadata.annotations[%[3]s] == '' ?
              Object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.matchExpressions{
                key: %[4]s, operator: 'DoesNotExist'} :
              Object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.matchExpressions{
                key: %[4]s, operator: 'In', values: object.metadata.annotations[%[3]s].split(',')}]}]}}}},
    JSONPatch{op: 'remove', path: '/metadata/annotations/' + jsonpatch.escapeKey(%[3]s)}])`,
	strconv.Quote(Label), strconv.Quote(LabelValue), strconv.Quote(workload.AnswerAnnotation), strconv.Quote(corev1.LabelArchStable))

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
