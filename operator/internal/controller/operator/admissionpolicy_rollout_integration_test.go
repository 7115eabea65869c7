//go:build integration

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

package operator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// TestAdmissionPolicyRollout: on an apiserver that applies MutatingAdmissionPolicy, the operator
// renders the policy, its binding and the probe once the components are available, tells the
// controller to publish the params (with the RBAC to write them), makes the webhook skip the
// pods the policy labels, and reports the policy in effect; turned off in the spec, all of it
// goes away and the condition says why; deleting the ClusterPodPlacementConfig removes it too.
func TestAdmissionPolicyRollout(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{AdmissionPolicy: v1beta1.AdmissionPolicyEnabled})
	wantCondition(t, v1beta1.ConditionAdmissionPolicyInEffect, metav1.ConditionTrue, v1beta1.ReasonPolicyEnforced)
	eventually(t, 30*time.Second, "the admission policy in place", func() error { return policyInPlace(true) })

	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.AdmissionPolicy = v1beta1.AdmissionPolicyDisabled })
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas) // the new template rolled out
	c := wantCondition(t, v1beta1.ConditionAdmissionPolicyInEffect, metav1.ConditionFalse, v1beta1.ReasonPolicyNotWanted)
	t.Logf("disabled: %s", c.Message)
	eventually(t, 30*time.Second, "the admission policy removed", func() error { return policyInPlace(false) })

	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.AdmissionPolicy = v1beta1.AdmissionPolicyEnabled })
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas)
	eventually(t, 30*time.Second, "the admission policy in place again", func() error { return policyInPlace(true) })
	deleteCluster(t)
	for _, name := range []string{operator.AdmissionPolicyName, operator.AdmissionPolicyProbeName} {
		err := k8s.Get(context.Background(), key("", name), &admissionregistrationv1.MutatingAdmissionPolicy{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("MutatingAdmissionPolicy %s after the ClusterPodPlacementConfig was deleted: err %v", name, err)
		}
	}
}

// policyInPlace checks every part of the policy path: present when want, absent otherwise.
func policyInPlace(want bool) error {
	ctx := context.Background()
	var errs []error
	check := func(what string, present bool) {
		if present != want {
			errs = append(errs, fmt.Errorf("%s: present %t, want %t", what, present, want))
		}
	}
	for _, name := range []string{operator.AdmissionPolicyName, operator.AdmissionPolicyProbeName} {
		err := k8s.Get(ctx, key("", name), &admissionregistrationv1.MutatingAdmissionPolicy{})
		check("MutatingAdmissionPolicy "+name, err == nil)
		err = k8s.Get(ctx, key("", name), &admissionregistrationv1.MutatingAdmissionPolicyBinding{})
		check("MutatingAdmissionPolicyBinding "+name, err == nil)
	}
	mwc, err := mutatingWebhookConfiguration()
	if err != nil {
		return err
	}
	check("the webhook's not-handled-by-admission-policy match condition", slices.ContainsFunc(mwc.Webhooks[0].MatchConditions,
		func(c admissionregistrationv1.MatchCondition) bool {
			return c.Name == "not-handled-by-admission-policy"
		}))
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, key(testNamespace, operator.ControllerComponentName), d); err != nil {
		return err
	}
	check("the controller's --"+cmdline.FlagPlacementParameters, containsArg(d.Spec.Template.Spec.Containers[0].Args,
		"--"+cmdline.FlagPlacementParameters+"="+operator.PlacementParametersName))
	err = k8s.Get(ctx, key(testNamespace, operator.PlacementParametersName), &corev1.ConfigMap{})
	check("the params ConfigMap", err == nil)
	role := &rbacv1.Role{}
	if err := k8s.Get(ctx, key(testNamespace, operator.ControllerComponentName), role); err != nil {
		return err
	}
	check("the controller's right to write the params ConfigMap", slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "configmaps") && slices.Contains(r.ResourceNames, operator.PlacementParametersName)
	}))
	return errors.Join(errs...)
}
