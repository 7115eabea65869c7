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

// Package localplacement is the local pod placement controller of one namespace
// (ClusterPodPlacementConfig spec.localPlacement, `archgate controller --namespace`): it removes
// the local scheduling gate after applying the namespace's PodPlacementConfigs' preferences
// (placement.DecideLocal), in one optimistic-locked write per pod. It inspects no image and reads
// no secret: the cluster-wide controller, which waits for the local gate to be gone, applies the
// required affinity. Everything it reads or writes is in its namespace, so namespaced RBAC is
// enough.
package localplacement

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementconfig"
)

// conflictRequeueDelay is the retry after a write lost an optimistic-concurrency race; the
// newer pod version is normally delivered by the watch before that anyway.
const conflictRequeueDelay = 100 * time.Millisecond

// Names of the controller, in controller-runtime's logs and metrics, and of its Event recorder.
const (
	ControllerName    = "localplacement"
	EventRecorderName = "archgate-local-pod-placement"
	// DefaultWorkers is the number of pods processed concurrently: the work is a pure merge and
	// one write, so a few workers keep up with the apiserver.
	DefaultWorkers = 4
	// reasonPreferenceSkipped is the Event reason when the pod's own preferred terms made the
	// namespace's configurations skip it (as the cluster-wide controller records it).
	reasonPreferenceSkipped = "PreferredAffinitySkipped"
)

// Options configure the local controller.
type Options struct {
	// Namespace is the one namespace the controller serves. Required.
	Namespace string
	// Workers is the number of pods processed concurrently; DefaultWorkers when zero.
	Workers int
	// Client and Recorder default to the manager's client and an events.k8s.io recorder.
	Client   client.Client
	Recorder events.EventRecorder
}

// CacheOptions returns the manager cache configuration: the namespace only, pods only while they
// carry the local gated label, managed fields stripped.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated})},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// Reconciler is the local pod placement controller.
type Reconciler struct {
	opts     Options
	client   client.Client
	recorder events.EventRecorder
}

// New returns the controller; SetupWithManager registers it.
func New(opts Options) (*Reconciler, error) {
	if opts.Namespace == "" {
		return nil, fmt.Errorf("localplacement: Options.Namespace is required")
	}
	opts.Workers = max(opts.Workers, 0)
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	return &Reconciler{opts: opts}, nil
}

// SetupWithManager registers the controller with mgr, whose cache must use CacheOptions.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.client, r.recorder = r.opts.Client, r.opts.Recorder
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	if r.recorder == nil {
		r.recorder = mgr.GetEventRecorder(EventRecorderName)
	}
	gated := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && v1beta1.HasLocalSchedulingGate(&pod.Spec)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(gated)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers}).
		Complete(r)
}

// Reconcile applies the namespace's preferences to one pod and removes its local gate, in one
// write. A PodPlacementConfig changed meanwhile applies to the pods processed after it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !v1beta1.HasLocalSchedulingGate(&pod.Spec) || pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	configs, err := placementconfig.Namespace(ctx, r.client, pod.Namespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	log := logf.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	updated := pod.DeepCopy()
	d := placement.DecideLocal(updated, configs)
	if d.SelectorErr != nil {
		log.Info("Ignoring PodPlacementConfigs with an invalid label selector", "reason", d.SelectorErr.Error())
	}
	LocalUngate(updated, d.PreferenceSource)
	err = r.client.Patch(ctx, updated, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err):
		log.V(1).Info("Pod changed while it was processed, retrying")
		return reconcile.Result{RequeueAfter: conflictRequeueDelay}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("removing the local scheduling gate: %w", err)
	}
	for _, c := range d.Preferred.Conflicts() {
		r.recorder.Eventf(updated, nil, corev1.EventTypeNormal, reasonPreferenceSkipped, "Place",
			"%s not applied: the pod's own preferred node affinity already weights %s", c.Source, v1beta1.NodeArchLabel)
	}
	log.V(1).Info("Local scheduling gate removed", "preferenceSource", d.PreferenceSource)
	return reconcile.Result{}, nil
}

// LocalUngate removes the local scheduling gate from pod (other gates stay, in order), marks it
// locally processed and records the configuration whose weights were added ("" when none).
func LocalUngate(pod *corev1.Pod, source string) {
	gates := slices.DeleteFunc(slices.Clone(pod.Spec.SchedulingGates), v1beta1.IsLocalSchedulingGate)
	if len(gates) == 0 {
		gates = nil
	}
	pod.Spec.SchedulingGates = gates
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[v1beta1.LabelLocalSchedulingGate] = v1beta1.LabelValueRemoved
	if source != "" {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[v1beta1.AnnotationPreferredAffinitySource] = source
	}
}
