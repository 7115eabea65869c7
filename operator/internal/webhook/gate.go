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

// Package webhook holds the scheduling-gate mutating admission webhook: on pod CREATE it adds the
// multiarch.openshift.io/scheduling-gate scheduling gate and the gated label, as a minimal JSON
// patch — or, with admission placement on, places a pod whose images the controller has already
// inspected anonymously (place.go). It never talks to a registry; with admission placement it
// reads the published images and the placement configurations from its informers.
package webhook

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementrules"
)

// SkipReason says why the webhook let a pod through without the gate; it is the "reason" label
// of archgate_webhook_pods_skipped_total.
type SkipReason string

// Reasons for not gating a pod.
const (
	// SkipNotPodCreate: the request is not the creation of a pod (the webhook configuration should
	// not send those).
	SkipNotPodCreate SkipReason = "not-pod-create"
	// SkipReservedNamespace: the pod is in a kube-*, openshift-* or hypershift-* namespace.
	SkipReservedNamespace SkipReason = "reserved-namespace"
	// SkipOperatorNamespace: the pod is in the operator's own namespace; gating the pod placement
	// controller's own pods could deadlock it.
	SkipOperatorNamespace SkipReason = "operator-namespace"
	// SkipNodeNameSet: spec.nodeName is set, the scheduler is bypassed and a gate would be refused.
	SkipNodeNameSet SkipReason = "node-name-set"
	// SkipDaemonSet: the pod is owned by a DaemonSet, which already places it on a given node.
	SkipDaemonSet SkipReason = "daemonset"
	// SkipAlreadyGated: the pod already carries the gate.
	SkipAlreadyGated SkipReason = "already-gated"
	// SkipPlacedAtAdmission: the pod is labelled placed at admission without the webhook's
	// admission-placement record (by the admission policy, or copied from a pod it placed): its
	// affinity already holds the placement. (A pod with the record is undone and decided again.)
	SkipPlacedAtAdmission SkipReason = "placed-at-admission"
	// SkipNodeSelectorArch: spec.nodeSelector pins kubernetes.io/arch. The controller would
	// change nothing (the pin is one architecture, so no weight can matter), and the gate would
	// only cost the pod latency and the apiserver a write.
	SkipNodeSelectorArch SkipReason = "node-selector-arch"
	// SkipUndecodable: the request's object could not be decoded as a pod. The webhook never
	// denies, so the pod is admitted unchanged; it is also counted in
	// archgate_webhook_failed_intercepts_total and logged as an error, because the apiserver would
	// refuse such a pod anyway and a decoding failure here means a version skew worth a look.
	SkipUndecodable SkipReason = "undecodable"
	// SkipTooManyImages: the pod names more distinct images than maxImagesPerPod. The
	// controller would release it unplaced without inspecting any; gating it would only cost two
	// more writes of a pod that large (each costs the apiserver the pod's managed fields). The
	// admission response warns the pod's creator instead.
	SkipTooManyImages SkipReason = "too-many-images"
	// SkipPlacementNotUndone: the pod carries the admission-placement annotation of an earlier
	// placement, and it does not fit the pod (a path it names is gone, or names a field archgate
	// never writes): the pod is admitted as it is, with a warning to its creator; counted in
	// archgate_webhook_failed_intercepts_total and logged as an error.
	SkipPlacementNotUndone SkipReason = "placement-not-undone"
	// SkipPanic: evaluating the pod panicked. The pod is admitted unchanged rather than denied
	// (controller-runtime answers a panic with an error, which the apiserver treats as a denial
	// whatever the failurePolicy); counted in archgate_webhook_failed_intercepts_total and
	// logged as an error with the panic's value.
	SkipPanic SkipReason = "panic"
)

// SkipReasons returns every SkipReason, in a new slice.
func SkipReasons() []SkipReason {
	return []SkipReason{
		SkipNotPodCreate, SkipReservedNamespace, SkipOperatorNamespace, SkipNodeNameSet,
		SkipDaemonSet, SkipAlreadyGated, SkipPlacedAtAdmission, SkipNodeSelectorArch, SkipTooManyImages, SkipUndecodable,
		SkipPlacementNotUndone, SkipPanic,
	}
}

// Options configures the SchedulingGate handler.
type Options struct {
	// OperatorNamespace is the namespace the operator and its operands run in; its pods are never
	// gated. Empty disables the check.
	OperatorNamespace string
	// Metrics records the handler's metrics. Nil means a fresh, unregistered set.
	Metrics *Metrics
	// Known turns admission placement on (place.go): the images the controller published. Nil
	// gates every pod.
	Known KnownImages
	// Configs reads the placement configurations (a cached client); required with Known.
	Configs client.Reader
	// Rules evaluates the ClusterPodPlacementConfig's placement rules for admission placement;
	// a new placementrules.Evaluator when nil.
	Rules *placementrules.Evaluator
	// Now is the clock that expires published images; time.Now when nil.
	Now func() time.Time
	// MaxImagesPerPod is the most distinct images of a pod that is gated; a pod naming more is
	// admitted unchanged, with a warning. v1beta1.DefaultMaxImagesPerPod when zero.
	MaxImagesPerPod int
}

func (o Options) withDefaults() Options {
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rules == nil && o.Configs != nil {
		o.Rules = placementrules.New(placementrules.Options{})
	}
	if o.MaxImagesPerPod <= 0 {
		o.MaxImagesPerPod = v1beta1.DefaultMaxImagesPerPod
	}
	if o.Configs == nil {
		o.Known = nil
	}
	return o
}

// SchedulingGate is the admission handler that gates new pods.
//
// Pods whose required node affinity already pins the architecture in every term are still gated:
// their required affinity is left alone by the controller, but preferred weights from the
// placement configurations may still choose among the architectures the user allowed. Pods
// pinned with spec.nodeSelector are not (see SkipNodeSelectorArch).
type SchedulingGate struct {
	decoder admission.Decoder
	opts    Options
}

var _ admission.Handler = (*SchedulingGate)(nil)

// NewSchedulingGate returns the handler. scheme must know core/v1 Pods; nil means a scheme with
// only core/v1.
func NewSchedulingGate(scheme *runtime.Scheme, opts Options) *SchedulingGate {
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := corev1.AddToScheme(scheme); err != nil {
			panic(err) // registering a static type list cannot fail
		}
	}
	return &SchedulingGate{decoder: admission.NewDecoder(scheme), opts: opts.withDefaults()}
}

// decision is what the handler decided about one request, for metrics and logs.
type decision struct {
	skip   SkipReason          // set when the pod was let through unchanged
	err    error               // set when the pod could not be evaluated (skip is SkipUndecodable)
	placed *placement.Decision // set when the pod was placed at admission instead of gated
	// placeErr is set when admission placement failed to read its configurations; the pod was
	// gated.
	placeErr error
	// undone is set when the webhook took its earlier admission placement off the pod and
	// decided again (undo.go).
	undone bool
}

// Handle gates a new pod, or lets it through unchanged; it never denies a request.
func (h *SchedulingGate) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, d := h.handleRecovered(ctx, req)
	h.opts.Metrics.observe(d, time.Since(start))

	log := logf.FromContext(ctx)
	switch {
	case d.err != nil:
		log.Error(d.err, "Failed to evaluate pod, admitting it without the scheduling gate",
			"namespace", req.Namespace, "name", req.Name, "uid", req.UID, "reason", d.skip)
	case d.skip != "":
		log.V(3).Info("Pod not gated", "namespace", req.Namespace, "name", req.Name, "reason", d.skip)
	case d.placed != nil:
		log.V(3).Info("Pod placed at admission", "namespace", req.Namespace, "name", req.Name, "outcome", d.placed.Outcome)
	default:
		if d.placeErr != nil {
			log.Error(d.placeErr, "Failed to place the pod at admission, gating it", "namespace", req.Namespace, "name", req.Name)
		}
		log.V(3).Info("Pod gated", "namespace", req.Namespace, "name", req.Name)
	}
	return resp
}

// handleRecovered is handle, with a panic turned into an unchanged admission: a bug of ours
// must not block a tenant's pod.
func (h *SchedulingGate) handleRecovered(ctx context.Context, req admission.Request) (resp admission.Response, d decision) {
	defer func() {
		if r := recover(); r != nil {
			resp, d = admission.Allowed(""), decision{skip: SkipPanic, err: fmt.Errorf("panic: %v", r)}
		}
	}()
	return h.handle(ctx, req)
}

func (h *SchedulingGate) handle(ctx context.Context, req admission.Request) (admission.Response, decision) {
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return admission.Allowed(""), decision{skip: SkipNotPodCreate}
	}
	namespace := req.Namespace
	if v1beta1.IsReservedNamespace(namespace) {
		return admission.Allowed(""), decision{skip: SkipReservedNamespace}
	}
	if h.opts.OperatorNamespace != "" && namespace == h.opts.OperatorNamespace {
		return admission.Allowed(""), decision{skip: SkipOperatorNamespace}
	}

	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		// Never deny: a denial here would block the pod for a reason that is not the user's (the
		// apiserver validates the pod itself); admit it unchanged, counted and logged.
		return admission.Allowed(""), decision{skip: SkipUndecodable, err: err}
	}
	undo, pod, err := undoPlacement(req.Object.Raw, pod)
	if err != nil {
		return admission.Allowed("").WithWarnings("archgate: " + err.Error() + "; the pod keeps the placement it carries"),
			decision{skip: SkipPlacementNotUndone, err: err}
	}
	resp, d := h.decide(ctx, pod)
	if len(undo) > 0 {
		// The operations apply in order: the undoing first, then the decision on the pod it left.
		resp.Patches = append(undo, resp.Patches...)
		d.undone = true
	}
	return resp, d
}

// decide gates pod, places it at admission, or lets it through unchanged.
func (h *SchedulingGate) decide(ctx context.Context, pod *corev1.Pod) (admission.Response, decision) {
	if reason := skipReason(pod); reason != "" {
		if ops := labelCarriedGate(pod); len(ops) > 0 {
			return admission.Patched("", ops...), decision{skip: reason}
		}
		return admission.Allowed(""), decision{skip: reason}
	}
	images := placement.PodImages(&pod.Spec)
	if n := len(images); n > h.opts.MaxImagesPerPod {
		return admission.Allowed("").WithWarnings(fmt.Sprintf(
				"archgate: the pod names %d images, more than maxImagesPerPod (%d): it is not placed by architecture", n, h.opts.MaxImagesPerPod)),
			decision{skip: SkipTooManyImages}
	}
	ops, placed, ok, err := h.placeAtAdmission(ctx, pod, images)
	if ok {
		return admission.Patched("", ops...), decision{placed: placed}
	}
	return admission.Patched("", gatePatch(pod)...), decision{placeErr: err}
}

// skipReason returns why the pod must not be gated, or "".
func skipReason(pod *corev1.Pod) SkipReason {
	if r := exemptReason(pod); r != "" {
		return r
	}
	switch {
	case v1beta1.HasSchedulingGate(&pod.Spec):
		return SkipAlreadyGated
	case pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission:
		return SkipPlacedAtAdmission
	}
	return ""
}

// exemptReason returns why no placement can matter for pod whatever its images, or "": the
// scheduler is bypassed (spec.nodeName), a DaemonSet runs it on chosen nodes, or its
// nodeSelector pins the architecture. Both the cluster's and a namespace's webhook leave such
// pods alone.
func exemptReason(pod *corev1.Pod) SkipReason {
	switch {
	case pod.Spec.NodeName != "":
		return SkipNodeNameSet
	case slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }):
		return SkipDaemonSet
	case placement.NodeSelectorPinsArchitecture(&pod.Spec):
		return SkipNodeSelectorArch
	}
	return ""
}

// labelCarriedGate returns the operations that label gated a pod created with archgate's gate
// already but without that label (a copy of a gated pod, such as kubectl debug --copy-to
// makes): the controller watches labelled pods only, and would never release it otherwise.
func labelCarriedGate(pod *corev1.Pod) []jsonpatch.JsonPatchOperation {
	if !v1beta1.HasSchedulingGate(&pod.Spec) || pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueGated {
		return nil
	}
	return setMapEntries(pod.Labels, "/metadata/labels", map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated})
}

// gatePatch returns the JSON patch operations that add the gate and the gated label, and nothing
// else: a missing labels map or schedulingGates list is added whole, otherwise one member is added.
func gatePatch(pod *corev1.Pod) []jsonpatch.JsonPatchOperation {
	return addGatePatch(pod, v1beta1.SchedulingGateName, v1beta1.LabelSchedulingGate)
}

// addGatePatch returns the operations that add the scheduling gate named gateName and the label
// label=gated (the cluster-wide or the local gate).
func addGatePatch(pod *corev1.Pod, gateName, label string) []jsonpatch.JsonPatchOperation {
	ops := setMapEntries(pod.Labels, "/metadata/labels", map[string]string{label: v1beta1.LabelValueGated})
	gate := corev1.PodSchedulingGate{Name: gateName}
	if len(pod.Spec.SchedulingGates) == 0 {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/schedulingGates", []corev1.PodSchedulingGate{gate}))
	} else {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/schedulingGates/-", gate))
	}
	return ops
}
