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
)

// ControllerName names the controller in controller-runtime's logs and metrics.
const ControllerName = "podplacementconfig-status"

// Reconciler writes the status conditions of one PodPlacementConfig.
type Reconciler struct {
	client client.Client
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// SetupWithManager registers the controller: a configuration is reconciled when it changes and
// when the ClusterPodPlacementConfig changes (in effect or not).
func SetupWithManager(mgr manager.Manager) error {
	r := &Reconciler{client: mgr.GetClient()}
	return ctrl.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.PodPlacementConfig{}).
		Watches(&v1beta1.ClusterPodPlacementConfig{}, handler.EnqueueRequestsFromMapFunc(r.allConfigs)).
		Complete(r)
}

// Reconcile computes the conditions and writes the status only when one changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ppc := &v1beta1.PodPlacementConfig{}
	if err := r.client.Get(ctx, req.NamespacedName, ppc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cluster := &v1beta1.ClusterPodPlacementConfig{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cluster); {
	case apierrors.IsNotFound(err):
		cluster = nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading the ClusterPodPlacementConfig: %w", err)
	}
	updated := ppc.DeepCopy()
	for _, c := range Conditions(ppc, cluster) {
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

// allConfigs enqueues every PodPlacementConfig (the ClusterPodPlacementConfig changed).
func (r *Reconciler) allConfigs(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1beta1.PodPlacementConfigList{}
	if err := r.client.List(ctx, list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}
