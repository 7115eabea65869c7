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
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/admissionpolicy"
)

// policyState is what the reconcile found about the admission policy.
type policyState struct {
	// wanted and served: the spec asks for it and the apiserver serves the API; the policy is
	// rendered when both hold. why says why not.
	wanted, served bool
	why            string
	// applied: the policy and its binding were applied this reconcile; enforced: the probe
	// policy mutated a dry run.
	applied, enforced bool
	// decided is set once decideAdmissionPolicy ran.
	decided bool
}

func policyCondition(o observation) condition {
	p := o.policy
	switch {
	case o.deleting:
		return condition{metav1.ConditionFalse, v1beta1.ReasonPolicyNotWanted, "the ClusterPodPlacementConfig is being deleted"}
	case !p.decided:
		return condition{metav1.ConditionFalse, v1beta1.ReasonPolicyPending, "the operator has not evaluated the admission policy yet"}
	case !p.wanted:
		return condition{metav1.ConditionFalse, v1beta1.ReasonPolicyNotWanted, p.why}
	case !p.served:
		return condition{metav1.ConditionFalse, v1beta1.ReasonPolicyAPINotServed,
			"the apiserver does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: the webhook places pods at admission"}
	case !p.applied:
		return condition{metav1.ConditionFalse, v1beta1.ReasonPolicyPending, "the policy is applied once the components are available"}
	case !p.enforced:
		return condition{metav1.ConditionFalse, v1beta1.ReasonPolicyNotEnforced,
			"the apiserver serves MutatingAdmissionPolicy but did not apply the probe policy " + AdmissionPolicyProbeName +
				" (is the MutatingAdmissionPolicy feature gate off?): the webhook places pods at admission"}
	}
	return condition{metav1.ConditionTrue, v1beta1.ReasonPolicyEnforced,
		"MutatingAdmissionPolicy " + AdmissionPolicyName + " places pods in the apiserver; the webhook handles only the pods it leaves alone"}
}

// policyProbe caches the probe's answer: one dry run per probeEvery, or per probeRetry while it
// has not been applied (a new policy takes the apiserver a moment to load).
type policyProbe struct {
	at       time.Time
	enforced bool
}

const (
	probeEvery = 10 * time.Minute
	probeRetry = 5 * time.Second
)

// decideAdmissionPolicy decides, before the steps, whether the policy is rendered: the
// controller's arguments and the webhook's match conditions depend on it.
func (r *Reconciler) decideAdmissionPolicy(s *scope) error {
	p := &s.obs.policy
	p.wanted, p.why = admissionpolicy.Wanted(&s.cppc.Spec)
	served, err := admissionpolicy.Served(r.client.RESTMapper())
	if err != nil {
		return err
	}
	p.served = served
	s.params.admissionPolicy = p.wanted && p.served
	p.decided = true
	return nil
}

// applyAdmissionPolicy applies the policy, its binding and the probe when they are rendered,
// and deletes them otherwise. It runs after the webhook registration, so the webhook is in
// place (and skips what the policy labels) before the policy takes pods.
func (r *Reconciler) applyAdmissionPolicy(ctx context.Context, s *scope) (string, error) {
	p := &s.obs.policy
	switch {
	case !p.served:
		return "", nil // nothing of ours can exist
	case !p.wanted:
		return "", r.removeAdmissionPolicy(ctx)
	}
	opts := admissionpolicy.Options{Name: AdmissionPolicyName, OperatorNamespace: r.opts.Namespace, Parameters: PlacementParametersName, Cluster: s.cppc}
	for _, obj := range []runtime.Object{
		admissionpolicy.ProbePolicy(AdmissionPolicyProbeName, r.opts.Namespace), admissionpolicy.ProbeBinding(AdmissionPolicyProbeName),
		admissionpolicy.Policy(opts), admissionpolicy.Binding(opts),
	} {
		if err := r.applyOwned(ctx, s, obj); err != nil {
			return "", err
		}
	}
	p.applied = true
	enforced, err := r.probeAdmissionPolicy(ctx)
	if err != nil {
		return "", err
	}
	p.enforced = enforced
	if !enforced {
		s.requeueIn(probeRetry)
	}
	return "", nil
}

// applyOwned applies obj (a typed object with its TypeMeta set), owned by the
// ClusterPodPlacementConfig.
func (r *Reconciler) applyOwned(ctx context.Context, s *scope, obj runtime.Object) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", obj, err)
	}
	return applyUnstructured(ctx, r.client, r.scheme, s.cppc, &unstructured.Unstructured{Object: raw})
}

// probeAdmissionPolicy dry-runs the probe ConfigMap's creation, at most once per probeEvery
// (probeRetry while the probe was not applied).
func (r *Reconciler) probeAdmissionPolicy(ctx context.Context) (bool, error) {
	r.mu.Lock()
	last := r.probe
	r.mu.Unlock()
	every := probeEvery
	if !last.enforced {
		every = probeRetry
	}
	if !last.at.IsZero() && time.Since(last.at) < every {
		return last.enforced, nil
	}
	cm := admissionpolicy.ProbeConfigMap(r.opts.Namespace)
	if err := r.uncached.Create(ctx, cm, client.DryRunAll); err != nil {
		return false, fmt.Errorf("probing MutatingAdmissionPolicy with a dry-run ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	enforced := admissionpolicy.ProbeApplied(cm)
	r.mu.Lock()
	r.probe = policyProbe{at: time.Now(), enforced: enforced}
	r.mu.Unlock()
	return enforced, nil
}

// removeAdmissionPolicy deletes the params ConfigMap, then the policies and bindings, when any
// of those is still in the cache: a spec without the policy (the default) costs no request per
// reconcile. The params go first, so that a failed deletion leaves a policy object behind and is
// tried again.
func (r *Reconciler) removeAdmissionPolicy(ctx context.Context) error {
	present := false
	for _, obj := range admissionPolicyObjects() {
		err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("reading %T %s: %w", obj, obj.GetName(), err)
		}
		present = present || err == nil
	}
	if !present {
		return nil
	}
	params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: PlacementParametersName}}
	if err := r.uncached.Delete(ctx, params); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	return r.deleteAdmissionPolicy(ctx)
}

// deleteAdmissionPolicy removes the policies and bindings: bindings first, so that no policy is
// ever bound without its params' publisher.
func (r *Reconciler) deleteAdmissionPolicy(ctx context.Context) error {
	for _, obj := range admissionPolicyObjects() {
		if err := r.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// admissionPolicyObjects are the operator's admission policy objects, bindings first.
func admissionPolicyObjects() []client.Object {
	var objs []client.Object
	for _, name := range []string{AdmissionPolicyName, AdmissionPolicyProbeName} {
		objs = append(objs, &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, name := range []string{AdmissionPolicyName, AdmissionPolicyProbeName} {
		objs = append(objs, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return objs
}
