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

package ppcstatus

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placementconfig"
)

// ControllerName names the controller in controller-runtime's logs and metrics.
const ControllerName = "podplacementconfig-status"

// Reconciler writes the status conditions of one PodPlacementConfig.
type Reconciler struct {
	client client.Client
	// localDeployments name a namespace's local Deployments (empty: none are reported on).
	localDeployments []string
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// SetupWithManager registers the controller: a configuration is reconciled when it or another
// configuration of its namespace changes, when the ClusterPodPlacementConfig changes (in effect
// or not), and when one of its namespace's local Deployments, named localDeployments, changes
// (the manager's cache must hold them).
func SetupWithManager(mgr manager.Manager, localDeployments ...string) error {
	r := &Reconciler{client: mgr.GetClient(), localDeployments: localDeployments}
	b := ctrl.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.PodPlacementConfig{}).
		Watches(&v1beta1.PodPlacementConfig{}, handler.EnqueueRequestsFromMapFunc(r.namespaceConfigs)).
		Watches(&v1beta1.ClusterPodPlacementConfig{}, handler.EnqueueRequestsFromMapFunc(r.allConfigs))
	if len(localDeployments) > 0 {
		b = b.Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if !slices.Contains(localDeployments, o.GetName()) {
				return nil
			}
			return r.namespaceConfigs(ctx, o)
		}))
	}
	return b.Complete(r)
}

// Reconcile computes the conditions and writes the status only when one changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ppc := &v1beta1.PodPlacementConfig{}
	if err := r.client.Get(ctx, req.NamespacedName, ppc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := placementconfig.Cluster(ctx, r.client)
	if err != nil {
		return reconcile.Result{}, err
	}
	siblings := &v1beta1.PodPlacementConfigList{}
	if err := r.client.List(ctx, siblings, client.InNamespace(ppc.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the PodPlacementConfigs of %s: %w", ppc.Namespace, err)
	}
	local, err := r.localComponents(ctx, ppc.Namespace, cluster)
	if err != nil {
		return reconcile.Result{}, err
	}
	updated := ppc.DeepCopy()
	for _, c := range append(Conditions(ppc, cluster), NamespaceConditions(ppc, siblings.Items, local)...) {
		meta.SetStatusCondition(&updated.Status.Conditions, c)
	}
	if equality.Semantic.DeepEqual(ppc.Status, updated.Status) {
		return reconcile.Result{}, nil
	}
	if err := r.client.Status().Update(ctx, updated); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating the status of PodPlacementConfig %s/%s: %w", ppc.Namespace, ppc.Name, err)
	}
	return reconcile.Result{}, nil
}

// localComponents reads namespace's local Deployments from the cache.
func (r *Reconciler) localComponents(ctx context.Context, namespace string, cluster *v1beta1.ClusterPodPlacementConfig) (LocalComponents, error) {
	local := LocalComponents{
		Enabled:     cluster != nil && cluster.Spec.LocalPlacementEnabled() && len(r.localDeployments) > 0,
		Names:       r.localDeployments,
		Deployments: map[string]*appsv1.Deployment{},
	}
	if !local.Enabled {
		return local, nil
	}
	for _, name := range r.localDeployments {
		d := &appsv1.Deployment{}
		switch err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); {
		case err == nil:
			local.Deployments[name] = d
		case !apierrors.IsNotFound(err):
			return local, fmt.Errorf("reading Deployment %s/%s: %w", namespace, name, err)
		}
	}
	return local, nil
}

// namespaceConfigs enqueues every PodPlacementConfig of o's namespace.
func (r *Reconciler) namespaceConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	return r.configRequests(ctx, client.InNamespace(o.GetNamespace()))
}

// allConfigs enqueues every PodPlacementConfig (the ClusterPodPlacementConfig changed).
func (r *Reconciler) allConfigs(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.configRequests(ctx)
}

// configRequests lists the PodPlacementConfigs opts select, as requests.
func (r *Reconciler) configRequests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &v1beta1.PodPlacementConfigList{}
	if err := r.client.List(ctx, list, opts...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}
