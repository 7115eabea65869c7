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
	"maps"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/webhook"
)

// LocalControllerName is the operator's controller of the namespaces' local components.
const LocalControllerName = "podplacementconfig-local"

// localRequestName is the name of every request of the local controller: a request stands for
// its namespace.
const localRequestName = "local-placement"

// LocalReconciler deploys and removes the local components of one namespace at a time
// (ClusterPodPlacementConfig spec.localPlacement): they exist while the namespace has at least
// one PodPlacementConfig and the ClusterPodPlacementConfig exists, is not being deleted and
// enables local placement. It shares the Reconciler's options and clients.
type LocalReconciler struct {
	*Reconciler
}

// Local returns the reconciler of the namespaces' local components.
func (r *Reconciler) Local() *LocalReconciler { return &LocalReconciler{r} }

// SetupWithManager registers the local reconciler: PodPlacementConfigs and the local
// Deployments enqueue their namespace, the ClusterPodPlacementConfig every namespace concerned.
func (r *LocalReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(LocalControllerName).
		Watches(&v1beta1.PodPlacementConfig{}, handler.EnqueueRequestsFromMapFunc(namespaceRequest)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if !isLocalComponent(o.GetName()) {
				return nil
			}
			return namespaceRequest(context.Background(), o)
		})).
		Watches(&v1beta1.ClusterPodPlacementConfig{}, handler.EnqueueRequestsFromMapFunc(r.everyNamespace)).
		Complete(r)
}

func namespaceRequest(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: localRequestName}}}
}

func isLocalComponent(name string) bool {
	return name == LocalControllerComponentName || name == LocalWebhookComponentName
}

// everyNamespace enqueues the namespaces that have PodPlacementConfigs or local components.
func (r *LocalReconciler) everyNamespace(ctx context.Context, _ client.Object) []reconcile.Request {
	namespaces, err := r.localNamespaces(ctx)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing the namespaces with local components")
	}
	var reqs []reconcile.Request
	for _, ns := range sets.List(namespaces) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: localRequestName}})
	}
	return reqs
}

// localNamespaces returns the namespaces with PodPlacementConfigs or local Deployments (cached).
func (r *LocalReconciler) localNamespaces(ctx context.Context) (sets.Set[string], error) {
	namespaces := sets.New[string]()
	ppcs := &v1beta1.PodPlacementConfigList{}
	if err := r.client.List(ctx, ppcs); err != nil {
		return namespaces, fmt.Errorf("listing PodPlacementConfigs: %w", err)
	}
	for _, p := range ppcs.Items {
		namespaces.Insert(p.Namespace)
	}
	withComponents, err := r.localDeploymentNamespaces(ctx)
	return namespaces.Union(withComponents), err
}

// localDeploymentNamespaces returns the namespaces with a local Deployment (cached).
func (r *Reconciler) localDeploymentNamespaces(ctx context.Context) (sets.Set[string], error) {
	namespaces := sets.New[string]()
	for _, name := range []string{LocalControllerComponentName, LocalWebhookComponentName} {
		deps := &appsv1.DeploymentList{}
		if err := r.client.List(ctx, deps, client.MatchingLabels{LabelName: name}); err != nil {
			return namespaces, fmt.Errorf("listing local Deployments: %w", err)
		}
		for _, d := range deps.Items {
			namespaces.Insert(d.Namespace)
		}
	}
	return namespaces, nil
}

// Reconcile deploys or removes the local components of req.Namespace.
func (r *LocalReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := req.Namespace
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cppc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	} else if err != nil {
		cppc = nil
	}
	ppcs := &v1beta1.PodPlacementConfigList{}
	if err := r.client.List(ctx, ppcs, client.InNamespace(ns)); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the PodPlacementConfigs of %s: %w", ns, err)
	}
	// The operator's own namespace and the reserved ones are never gated (the webhook
	// configuration's match condition excludes them): no local components there.
	if WantLocalComponents(cppc, ppcs.Items) && ns != r.opts.Namespace && !v1beta1.IsReservedNamespace(ns) {
		return r.deployLocal(ctx, cppc, ns)
	}
	return r.removeLocal(ctx, ns)
}

// WantLocalComponents reports whether a namespace with the PodPlacementConfigs configs gets local
// components: the ClusterPodPlacementConfig (nil when absent) exists, is not being deleted and
// enables local placement, and at least one of configs is not being deleted.
func WantLocalComponents(cppc *v1beta1.ClusterPodPlacementConfig, configs []v1beta1.PodPlacementConfig) bool {
	if cppc == nil || !cppc.DeletionTimestamp.IsZero() || !cppc.Spec.LocalPlacementEnabled() {
		return false
	}
	for _, c := range configs {
		if c.DeletionTimestamp.IsZero() {
			return true
		}
	}
	return false
}

// deployLocal applies the local components of ns in order: identity, serving certificate and
// Service, Deployments, and the webhook entry once both Deployments are available.
func (r *LocalReconciler) deployLocal(ctx context.Context, cppc *v1beta1.ClusterPodPlacementConfig, ns string) (reconcile.Result, error) {
	if r.opts.CertProvider != certs.ProviderSelfSigned {
		return reconcile.Result{}, fmt.Errorf("local placement in namespace %s: certificate provider %s is not supported for local webhooks (only %s)",
			ns, r.opts.CertProvider, certs.ProviderSelfSigned)
	}
	p := localParams(operandParams{image: r.opts.Image, verbosity: cppc.Spec.LogVerbosity, provider: r.opts.CertProvider, args: r.opts.Args,
		components: cppc.Spec.Components}, ns)
	for _, obj := range []namedApplyConfiguration{
		serviceAccount(p, LocalControllerComponentName),
		serviceAccount(p, LocalWebhookComponentName),
		localControllerRole(p),
		roleBinding(p, LocalControllerComponentName),
		localWebhookRole(p),
		roleBinding(p, LocalWebhookComponentName),
		localWebhookService(p),
	} {
		if err := apply(ctx, r.client, obj); err != nil {
			return reconcile.Result{}, err
		}
	}
	ca, err := r.opts.Certs.EnsureCA(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.createServingSecret(ctx, ns); err != nil {
		return reconcile.Result{}, err
	}
	renewAt, err := r.opts.Certs.EnsureServing(ctx, ca, certs.ServingSecret{
		Name: LocalWebhookServingSecretName, Namespace: ns, DNSNames: certs.ServiceDNSNames(ns, LocalWebhookComponentName),
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	var waiting []string
	var states []deploymentState
	for _, ac := range []*appsv1ac.DeploymentApplyConfiguration{localWebhookDeployment(p), localControllerDeployment(p)} {
		if err := apply(ctx, r.client, ac); err != nil {
			return reconcile.Result{}, err
		}
		d, err := appliedDeployment(ac)
		if err != nil {
			return reconcile.Result{}, err
		}
		st := observeDeployment(describeKey(d), d)
		states = append(states, st)
		if !st.available {
			waiting = append(waiting, st.describe())
		}
	}
	requeue := min(time.Until(renewAt), r.opts.ResyncPeriod)
	if len(waiting) > 0 {
		logf.FromContext(ctx).V(1).Info("Local components rolling out", "namespace", ns, "waiting", strings.Join(waiting, "; "))
		wait, err := r.failOpenLocal(ctx, cppc, ns, states)
		return reconcile.Result{RequeueAfter: min(requeue, waitRequeue, wait)}, err
	}
	if err := r.applyLocalEntry(ctx, ns, ca.Bundle); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: max(requeue, time.Second)}, nil
}

// failOpenLocal does for ns's local components what failOpen does for the cluster-wide ones: once
// one of them has served no replica for the fail-open grace period, ns's webhook entry is removed
// (new pods are admitted without the local gate) and the pods that carry the local gate are
// released (the cluster-wide controller applies the PodPlacementConfigs to them instead), so
// that a crash-looping local controller strands no pod. deployLocal registers the entry again
// once both serve. It returns when to look again (waitRequeue when nothing is due sooner).
func (r *LocalReconciler) failOpenLocal(ctx context.Context, cppc *v1beta1.ClusterPodPlacementConfig, ns string,
	states []deploymentState) (time.Duration, error) {
	switch wait := r.failOpenIn(states...); {
	case wait < 0:
		return waitRequeue, nil
	case wait > 0:
		return wait, nil
	}
	registered, err := r.hasLocalEntry(ctx, ns)
	if err != nil {
		return 0, err
	}
	if registered {
		if err := r.removeLocalEntry(ctx, ns); err != nil {
			return 0, err
		}
		described := make([]string, 0, len(states))
		for _, st := range states {
			described = append(described, st.describe())
		}
		logf.FromContext(ctx).Info("Unregistered a namespace's local webhook: a local component is unavailable (fail open)",
			"namespace", ns, "components", described)
		if r.opts.Recorder != nil {
			r.opts.Recorder.Eventf(cppc, nil, corev1.EventTypeWarning, v1beta1.ReasonWebhookUnregistered, "Unregister",
				"removed the local webhook of namespace %s and released its local gates: %s", ns, strings.Join(described, "; "))
		}
	}
	switch again, err := r.releaseLocalGates(ctx, ns); {
	case err != nil:
		return 0, err
	case again:
		return relistLocalGates, nil
	}
	return waitRequeue, nil
}

// createServingSecret creates ns's serving Secret, empty, when it is missing, by server-side
// apply: the apiserver authorizes an apply with the object's name, so the operator's RBAC can
// name the Secret in every namespace instead of granting it the creation of any Secret there
// (certs.Manager would create it with a plain POST). EnsureServing then fills it in by an update,
// also authorized by name. The apply's manager claims the empty keys once; later applies are
// never made, so the certificate written by the update is not reset.
func (r *LocalReconciler) createServingSecret(ctx context.Context, ns string) error {
	err := r.uncached.Get(ctx, types.NamespacedName{Namespace: ns, Name: LocalWebhookServingSecretName}, &corev1.Secret{})
	if client.IgnoreNotFound(err) != nil || err == nil {
		return err
	}
	ac := corev1ac.Secret(LocalWebhookServingSecretName, ns).WithType(corev1.SecretTypeTLS).
		WithLabels(ManagedLabels(LocalWebhookComponentName)).
		WithData(map[string][]byte{corev1.TLSCertKey: {}, corev1.TLSPrivateKeyKey: {}})
	if err := r.uncached.Apply(ctx, ac, client.FieldOwner(FieldOwner+"/bootstrap")); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", ns, LocalWebhookServingSecretName, err)
	}
	return nil
}

// localFieldOwner is the server-side apply field manager of ns's entry in the shared
// MutatingWebhookConfiguration: the webhooks list is a map keyed by name, so each namespace owns
// its entry alone, and applying nothing under that manager removes it.
func localFieldOwner(ns string) string { return FieldOwner + "/local/" + ns }

// applyLocalEntry registers ns's local webhook: one entry of LocalMutatingWebhookConfigurationName,
// sending the pods of ns only to the namespace's Service.
func (r *LocalReconciler) applyLocalEntry(ctx context.Context, ns string, caBundle []byte) error {
	mwc := webhook.Configuration(webhook.ConfigurationOptions{
		Name: LocalMutatingWebhookConfigurationName,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: LocalWebhookComponentName, Port: ptr.To[int32](443)},
		},
		CABundle:          caBundle,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		OperatorNamespace: r.opts.Namespace,
		EntryName:         webhook.LocalEntryName(ns),
		Path:              webhook.LocalPath,
	})
	mwc.Labels = maps.Clone(ManagedLabels(LocalWebhookComponentName))
	ac, err := mutatingWebhookApplyConfiguration(mwc)
	if err != nil {
		return err
	}
	if err := r.client.Apply(ctx, ac, client.FieldOwner(localFieldOwner(ns)), client.ForceOwnership); err != nil {
		return fmt.Errorf("registering the local webhook of %s: %w", ns, err)
	}
	return nil
}

// removeLocalEntry unregisters ns's local webhook (its entry only).
func (r *LocalReconciler) removeLocalEntry(ctx context.Context, ns string) error {
	ac := admissionregistrationv1ac.MutatingWebhookConfiguration(LocalMutatingWebhookConfigurationName)
	err := r.client.Apply(ctx, ac, client.FieldOwner(localFieldOwner(ns)), client.ForceOwnership)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("unregistering the local webhook of %s: %w", ns, err)
	}
	return nil
}

// hasLocalEntry reports whether ns's entry is registered.
func (r *LocalReconciler) hasLocalEntry(ctx context.Context, ns string) (bool, error) {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	err := r.client.Get(ctx, types.NamespacedName{Name: LocalMutatingWebhookConfigurationName}, mwc)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	for _, w := range mwc.Webhooks {
		if w.Name == webhook.LocalEntryName(ns) {
			return true, nil
		}
	}
	return false, nil
}

// removeLocal removes ns's local components in the order that never strands a pod: unregister
// the webhook (no new local gates), release the pods that still carry the local gate (the
// cluster-wide controller then applies the PodPlacementConfigs itself), delete the components.
// It does nothing in a namespace without them.
func (r *LocalReconciler) removeLocal(ctx context.Context, ns string) (reconcile.Result, error) {
	registered, err := r.hasLocalEntry(ctx, ns)
	if err != nil {
		return reconcile.Result{}, err
	}
	deps := &appsv1.DeploymentList{}
	if err := r.client.List(ctx, deps, client.InNamespace(ns), client.MatchingLabels{LabelManagedBy: ManagedBy}); err != nil {
		return reconcile.Result{}, err
	}
	if !registered && !containsLocalDeployment(deps.Items) {
		return reconcile.Result{}, nil
	}
	if err := r.removeLocalEntry(ctx, ns); err != nil {
		return reconcile.Result{}, err
	}
	switch again, err := r.releaseLocalGates(ctx, ns); {
	case err != nil:
		return reconcile.Result{}, err
	case again:
		return reconcile.Result{RequeueAfter: relistLocalGates}, nil
	}
	if err := r.deleteLocalObjects(ctx, ns); err != nil {
		return reconcile.Result{}, err
	}
	logf.FromContext(ctx).Info("Local components removed and local gates released", "namespace", ns)
	return reconcile.Result{}, nil
}

func containsLocalDeployment(deps []appsv1.Deployment) bool {
	for _, d := range deps {
		if isLocalComponent(d.Name) {
			return true
		}
	}
	return false
}

// relistLocalGates is how soon the pods of a namespace whose local webhook was removed are
// listed again after some were released: the list catches pods gated while the apiserver still
// called the webhook.
const relistLocalGates = 100 * time.Millisecond

// releaseLocalGates releases ns's local gates and says whether some were found (list again).
func (r *Reconciler) releaseLocalGates(ctx context.Context, ns string) (again bool, err error) {
	sum, err := r.releaseLocal(ctx, ns)
	return err == nil && sum.Selected > 0, err
}

// releaseLocal removes the local gate from the pods of ns ("" for every namespace) that still
// carry it.
func (r *Reconciler) releaseLocal(ctx context.Context, ns string) (podplacement.ReleaseSummary, error) {
	passCtx, cancel := context.WithTimeout(ctx, r.opts.ReleasePassTimeout)
	defer cancel()
	sum, err := podplacement.Release(passCtx, r.uncached, podplacement.ReleaseOptions{
		Namespace: ns, Local: true, Workers: r.opts.ReleaseWorkers,
	})
	if err == nil && sum.Failed > 0 {
		err = fmt.Errorf("releasing the local gate: %w", errors.Join(sum.Errors...))
	}
	logf.FromContext(ctx).V(1).Info("Released local gates", "namespace", ns, "found", sum.Selected, "released", sum.Released)
	return sum, err
}

// deleteLocalObjects deletes ns's local components (missing ones are fine).
func (r *Reconciler) deleteLocalObjects(ctx context.Context, ns string) error {
	m := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	var errs []error
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: m(LocalWebhookComponentName)},
		&appsv1.Deployment{ObjectMeta: m(LocalControllerComponentName)},
		&corev1.Service{ObjectMeta: m(LocalWebhookComponentName)},
		&corev1.Secret{ObjectMeta: m(LocalWebhookServingSecretName)},
		&rbacv1.RoleBinding{ObjectMeta: m(LocalControllerComponentName)},
		&rbacv1.Role{ObjectMeta: m(LocalControllerComponentName)},
		&rbacv1.RoleBinding{ObjectMeta: m(LocalWebhookComponentName)},
		&rbacv1.Role{ObjectMeta: m(LocalWebhookComponentName)},
		&corev1.ServiceAccount{ObjectMeta: m(LocalControllerComponentName)},
		&corev1.ServiceAccount{ObjectMeta: m(LocalWebhookComponentName)},
	} {
		err := r.uncached.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && client.IgnoreNotFound(err) != nil && !meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Errorf("deleting %T %s: %w", obj, describeKey(obj), err))
		}
	}
	return errors.Join(errs...)
}

// removeAllLocal is the ClusterPodPlacementConfig's deletion step for local placement: unregister
// every local webhook, release every local gate, delete every namespace's local components.
// pending is the number of locally gated pods found in this pass (another pass must follow).
func (r *Reconciler) removeAllLocal(ctx context.Context) (pending int, err error) {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: LocalMutatingWebhookConfigurationName}}
	if err := r.client.Delete(ctx, mwc); client.IgnoreNotFound(err) != nil {
		return 0, fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", mwc.Name, err)
	}
	sum, err := r.releaseLocal(ctx, "")
	if err != nil || sum.Selected > 0 {
		return sum.Selected, err
	}
	namespaces, err := r.localDeploymentNamespaces(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, ns := range sets.List(namespaces) {
		errs = append(errs, r.deleteLocalObjects(ctx, ns))
	}
	return 0, errors.Join(errs...)
}
