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

package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
)

// webhookSettle is how long after the webhook was unregistered an empty list of gated pods is
// trusted: the apiserver may still call the webhook for a moment after its configuration is
// deleted.
const webhookSettle = 2 * time.Second

// unregisteredAt returns when this process first saw the ClusterPodPlacementConfig being
// deleted (and so unregistered the webhook), by its own clock: the deletion timestamp comes
// from the apiserver's clock, which may be skewed.
func (r *Reconciler) unregisteredAt(cppc *v1beta1.ClusterPodPlacementConfig) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deletionSeen == nil {
		r.deletionSeen = map[types.UID]time.Time{}
	}
	t, ok := r.deletionSeen[cppc.UID]
	if !ok {
		t = time.Now()
		r.deletionSeen[cppc.UID] = t
	}
	return t
}

// reconcileDelete removes the components in the order that never strands a pod: unregister the
// webhook (no new gated pods), release every gated pod (the gate is removed, the affinity left
// alone), delete the components, and only then drop the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(s.cppc, Finalizer) {
		return reconcile.Result{}, nil
	}
	log := logf.FromContext(ctx)
	s.obs.deleting = true
	prog := &releaseProgress{phase: "unregistering the webhook"}
	s.obs.release = prog

	if err := r.deleteWebhookConfiguration(ctx); err != nil {
		return reconcile.Result{}, errors.Join(err, r.updateStatus(ctx, s))
	}
	s.obs.registered = false

	prog.phase = "removing the local components"
	if pending, err := r.removeAllLocal(ctx); err != nil || pending > 0 {
		prog.remaining = pending
		if err != nil {
			prog.errs = append(prog.errs, err)
		}
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, errors.Join(err, r.updateStatus(ctx, s))
	}

	prog.phase = "releasing gated pods"
	passCtx, cancel := context.WithTimeout(ctx, r.opts.ReleasePassTimeout)
	sum, err := podplacement.Release(passCtx, r.uncached, podplacement.ReleaseOptions{Workers: r.opts.ReleaseWorkers})
	cancel()
	prog.released, prog.remaining = sum.Released, sum.Remaining()
	// A pass that ran out of time is not a failure: the next one carries on.
	passEnded := errors.Is(passCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	for _, e := range append(sum.Errors, err) {
		if e != nil && !(passEnded && errors.Is(e, context.DeadlineExceeded)) {
			prog.errs = append(prog.errs, e)
		}
	}
	log.Info("Released gated pods", "found", sum.Selected, "released", sum.Released, "alreadyDone", sum.AlreadyDone, "failed", sum.Failed)
	if len(prog.errs) > 0 {
		if r.opts.Recorder != nil {
			r.opts.Recorder.Eventf(s.cppc, nil, corev1.EventTypeWarning, v1beta1.ReasonReleaseFailed, "Release",
				"%d gated pods not released yet: %v", prog.remaining, errors.Join(prog.errs...))
		}
		return reconcile.Result{RequeueAfter: 5 * time.Second}, r.updateStatus(ctx, s)
	}
	if sum.Selected > 0 || passEnded {
		// Another pass lists again: it also catches pods gated while the apiserver still
		// called the webhook.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, r.updateStatus(ctx, s)
	}
	if wait := webhookSettle - time.Since(r.unregisteredAt(s.cppc)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, r.updateStatus(ctx, s)
	}

	prog.phase = "deleting the components"
	if err := r.deleteOperands(ctx); err != nil {
		return reconcile.Result{}, errors.Join(err, r.updateStatus(ctx, s))
	}
	// The last word: nothing was gated after the components went away.
	left := &corev1.PodList{}
	if err := r.uncached.List(ctx, left, client.MatchingLabels{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}, client.Limit(1)); err != nil {
		return reconcile.Result{}, err
	}
	leftLocal := &corev1.PodList{}
	if err := r.uncached.List(ctx, leftLocal, client.MatchingLabels{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated}, client.Limit(1)); err != nil {
		return reconcile.Result{}, err
	}
	if len(left.Items)+len(leftLocal.Items) > 0 {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, r.updateStatus(ctx, s)
	}

	before := s.cppc.DeepCopy()
	controllerutil.RemoveFinalizer(s.cppc, Finalizer)
	if err := r.client.Patch(ctx, s.cppc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.mu.Lock()
	delete(r.deletionSeen, s.cppc.UID)
	r.mu.Unlock()
	log.Info("Components removed and gated pods released; the ClusterPodPlacementConfig can go")
	return reconcile.Result{}, nil
}

// operandObjects lists every object the reconciler creates for the ClusterPodPlacementConfig,
// in deletion order (workloads first, their identity last).
func (r *Reconciler) operandObjects() []client.Object {
	ns := r.opts.Namespace
	m := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	cluster := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	certificate := &unstructured.Unstructured{}
	certificate.SetGroupVersionKind(certs.CertificateGVK)
	certificate.SetNamespace(ns)
	certificate.SetName(WebhookCertificateName)
	return []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: cluster(r.opts.MutatingWebhookConfigurationName)},
		&appsv1.Deployment{ObjectMeta: m(WebhookComponentName)},
		&appsv1.Deployment{ObjectMeta: m(ControllerComponentName)},
		&policyv1.PodDisruptionBudget{ObjectMeta: m(WebhookComponentName)},
		&policyv1.PodDisruptionBudget{ObjectMeta: m(ControllerComponentName)},
		&corev1.Service{ObjectMeta: m(WebhookComponentName)},
		&corev1.Service{ObjectMeta: m(WebhookMetricsServiceName)},
		&corev1.Service{ObjectMeta: m(ControllerMetricsServiceName)},
		certificate,
		&corev1.Secret{ObjectMeta: m(WebhookServingSecretName)},
		&corev1.Secret{ObjectMeta: m(WebhookMetricsSecretName)},
		&corev1.Secret{ObjectMeta: m(ControllerMetricsSecretName)},
		&corev1.ConfigMap{ObjectMeta: m(RegistryCABundleName)},
		&corev1.ConfigMap{ObjectMeta: m(RegistriesConfName)},
		&corev1.ConfigMap{ObjectMeta: m(RegistryCertsName)},
		&corev1.ConfigMap{ObjectMeta: m(CredentialProvidersName)},
		&corev1.ConfigMap{ObjectMeta: m(KnownImagesName)},
		&corev1.ConfigMap{ObjectMeta: m(PlacementParametersName)},
		&rbacv1.RoleBinding{ObjectMeta: m(ControllerComponentName)},
		&rbacv1.Role{ObjectMeta: m(ControllerComponentName)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: cluster(ControllerPodDeleterName)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: cluster(ControllerComponentName)},
		&rbacv1.ClusterRole{ObjectMeta: cluster(ControllerComponentName)},
		&rbacv1.RoleBinding{ObjectMeta: m(WebhookComponentName)},
		&rbacv1.Role{ObjectMeta: m(WebhookComponentName)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: cluster(WebhookComponentName)},
		&rbacv1.ClusterRole{ObjectMeta: cluster(WebhookComponentName)},
		&corev1.ServiceAccount{ObjectMeta: m(WebhookComponentName)},
		&corev1.ServiceAccount{ObjectMeta: m(ControllerComponentName)},
	}
}

// deleteOperands deletes every component object; missing objects (and kinds, like cert-manager's
// when it is not installed) are fine.
func (r *Reconciler) deleteOperands(ctx context.Context) error {
	var errs []error
	for _, obj := range r.operandObjects() {
		err := r.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err == nil || client.IgnoreNotFound(err) == nil || meta.IsNoMatchError(err) {
			continue
		}
		errs = append(errs, fmt.Errorf("deleting %T %s: %w", obj, describeKey(obj), err))
	}
	errs = append(errs, r.prunePullSecretRBAC(ctx))
	return errors.Join(errs...)
}
