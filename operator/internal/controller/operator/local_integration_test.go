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
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// localNamespace creates a namespace for local placement, with a PodPlacementConfig.
func localNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// createPPC creates a PodPlacementConfig (deleted when the test ends, before the
// ClusterPodPlacementConfig, which it would block).
func createPPC(t *testing.T, ns, name string, priority int32) *v1beta1.PodPlacementConfig {
	t.Helper()
	ppc := objects.PodPlacementConfig(ns, name).WithPriority(priority).WithPlatforms(objects.Platform("arm64", 50)).Build()
	if err := k8s.Create(context.Background(), ppc); err != nil {
		t.Fatalf("creating PodPlacementConfig %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(k8s.Delete(context.Background(), ppc)) })
	return ppc
}

// locallyGatedPod creates a pod carrying the local gate, as the local webhook admits it.
func locallyGatedPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: v1beta1.LocalSchedulingGateName}},
			Containers:      []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
		},
	}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// setLocalDeploymentsAvailable plays the Deployment controller for ns's local components.
func setLocalDeploymentsAvailable(t *testing.T, ns string) {
	t.Helper()
	for _, name := range []string{operator.LocalControllerComponentName, operator.LocalWebhookComponentName} {
		eventually(t, 30*time.Second, "Deployment "+ns+"/"+name, func() error { return k8s.Get(context.Background(), key(ns, name), &appsv1.Deployment{}) })
		setDeploymentStatusIn(t, ns, name, 1)
	}
}

// localEntry returns ns's entry of the local webhook configuration, nil when there is none.
func localEntry(ns string) (*admissionregistrationv1.MutatingWebhook, error) {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(context.Background(), key("", operator.LocalMutatingWebhookConfigurationName), mwc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	for i := range mwc.Webhooks {
		if mwc.Webhooks[i].Name == ns+".local-scheduling-gate.multiarch.openshift.io" {
			return &mwc.Webhooks[i], nil
		}
	}
	return nil, nil
}

// can asks the apiserver whether the ServiceAccount ns/sa may do verb on resource in namespace
// ("" for every namespace).
func can(t *testing.T, ns, sa, verb, group, resource, namespace string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource},
	}}
	if err := k8s.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

func TestLocalComponentsFollowThePodPlacementConfigs(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{LocalPlacement: v1beta1.LocalPlacementEnabled, LogVerbosity: v1beta1.LogVerbosityDebug})
	ns := "team-local"
	localNamespace(t, ns)
	pod := locallyGatedPod(t, ns, "waiting")
	first := createPPC(t, ns, "first", 1)
	second := createPPC(t, ns, "second", 2)

	for _, name := range []string{operator.LocalControllerComponentName, operator.LocalWebhookComponentName} {
		d := &appsv1.Deployment{}
		eventually(t, 30*time.Second, "local Deployment "+name, func() error { return k8s.Get(context.Background(), key(ns, name), d) })
		args := d.Spec.Template.Spec.Containers[0].Args
		if !containsArg(args, "--namespace="+ns) || !containsArg(args, "--log-verbosity="+string(v1beta1.LogVerbosityDebug)) {
			t.Errorf("Deployment %s args %v: want --namespace=%s and the cluster-wide log verbosity", name, args, ns)
		}
		for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			if err := k8s.Get(context.Background(), key(ns, name), obj); err != nil {
				t.Errorf("%T %s/%s: %v", obj, ns, name, err)
			}
		}
	}
	assertLocalRBACNamespaced(t, ns)

	if entry, err := localEntry(ns); err != nil || entry != nil {
		t.Fatalf("local webhook registered before its Deployments are available: %v, %v", entry, err)
	}
	wantPPC(t, first, v1beta1.ConditionAvailable, v1beta1.ReasonComponentsUnavailable)
	wantPPC(t, second, v1beta1.ConditionProgressing, v1beta1.ReasonRollingOut)
	setLocalDeploymentsAvailable(t, ns)
	// Every configuration of the namespace reports the local components.
	wantPPC(t, first, v1beta1.ConditionAvailable, v1beta1.ReasonAllComponentsReady)
	wantPPC(t, second, v1beta1.ConditionAvailable, v1beta1.ReasonAllComponentsReady)
	wantPPC(t, second, v1beta1.ConditionNamespaceConfigsValid, v1beta1.ReasonAsExpected)
	eventually(t, 30*time.Second, "local webhook entry registered", func() error {
		entry, err := localEntry(ns)
		if err == nil && entry == nil {
			return errors.New("no entry")
		}
		return err
	})

	// Not the last one: the components stay.
	if err := k8s.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	consistently(t, 2*time.Second, "local components kept while a PodPlacementConfig remains", func() error {
		return k8s.Get(context.Background(), key(ns, operator.LocalControllerComponentName), &appsv1.Deployment{})
	})

	if err := k8s.Delete(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the local gate released and the local components removed", func() error {
		got := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		if v1beta1.HasLocalSchedulingGate(&got.Spec) || got.Labels[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueReleased {
			return fmt.Errorf("pod gates %v, labels %v", got.Spec.SchedulingGates, got.Labels)
		}
		if entry, err := localEntry(ns); err != nil || entry != nil {
			return fmt.Errorf("local webhook entry still registered (%v)", err)
		}
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			for _, name := range []string{operator.LocalControllerComponentName, operator.LocalWebhookComponentName} {
				if err := k8s.Get(context.Background(), key(ns, name), obj); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s still there (err %v)", obj, name, err)
				}
			}
		}
		return nil
	})
}

// assertLocalRBACNamespaced checks, with the apiserver's authorizer, that the local components
// may act in ns only, and that no cluster-scoped binding names them.
func assertLocalRBACNamespaced(t *testing.T, ns string) {
	t.Helper()
	ctl, wh := operator.LocalControllerComponentName, operator.LocalWebhookComponentName
	eventually(t, 30*time.Second, "local RoleBindings effective", func() error {
		if !can(t, ns, ctl, "patch", "", "pods", ns) {
			return errors.New("local controller may not patch pods of its namespace")
		}
		return nil
	})
	for _, c := range []struct {
		sa, verb, group, resource, namespace string
		want                                 bool
	}{
		{ctl, "list", v1beta1.GroupName, "podplacementconfigs", ns, true},
		{ctl, "patch", "", "pods", "default", false},
		{ctl, "list", "", "pods", "", false},
		{ctl, "get", "", "secrets", ns, false},
		{ctl, "list", v1beta1.GroupName, "clusterpodplacementconfigs", "", false},
		{wh, "list", v1beta1.GroupName, "podplacementconfigs", ns, true},
		{wh, "list", "", "pods", ns, false},
		{wh, "list", v1beta1.GroupName, "podplacementconfigs", "", false},
	} {
		if got := can(t, ns, c.sa, c.verb, c.group, c.resource, c.namespace); got != c.want {
			t.Errorf("%s may %s %s.%s in %q = %v, want %v", c.sa, c.verb, c.resource, c.group, c.namespace, got, c.want)
		}
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := k8s.List(context.Background(), crbs); err != nil {
		t.Fatal(err)
	}
	for _, b := range crbs.Items {
		if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Namespace == ns }) {
			t.Errorf("ClusterRoleBinding %s names a subject of %s: %v", b.Name, ns, b.Subjects)
		}
	}
}

// TestLocalComponentsGoWithLocalPlacement: turning spec.localPlacement off removes every
// namespace's local components and releases their local gates, PodPlacementConfigs kept.
func TestLocalComponentsGoWithLocalPlacement(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{LocalPlacement: v1beta1.LocalPlacementEnabled})
	ns := "team-local-toggle"
	localNamespace(t, ns)
	pod := locallyGatedPod(t, ns, "waiting")
	createPPC(t, ns, "kept", 1)
	setLocalDeploymentsAvailable(t, ns)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cppc := getCluster(t)
		cppc.Spec.LocalPlacement = v1beta1.LocalPlacementDisabled
		return k8s.Update(context.Background(), cppc)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "local gate released and local components removed", func() error {
		got := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		if got.Labels[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueReleased {
			return fmt.Errorf("pod gates %v, labels %v", got.Spec.SchedulingGates, got.Labels)
		}
		if err := k8s.Get(context.Background(), key(ns, operator.LocalControllerComponentName), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("local controller Deployment still there (err %v)", err)
		}
		return nil
	})
	wantPPC(t, &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}},
		v1beta1.ConditionAvailable, v1beta1.ReasonLocalPlacementDisabled)
}

// A local controller that serves no replica for the fail-open grace period must not strand the
// pods its webhook gated: the namespace's entry goes and its local gates are released, and both
// come back once the controller serves again.
func TestLocalComponentsFailOpen(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{LocalPlacement: v1beta1.LocalPlacementEnabled})
	ns := "team-local-fail-open"
	localNamespace(t, ns)
	createPPC(t, ns, "prefs", 1)
	setLocalDeploymentsAvailable(t, ns)
	eventually(t, 30*time.Second, "local webhook entry registered", func() error {
		if e, err := localEntry(ns); err != nil || e == nil {
			return fmt.Errorf("no entry (err %v)", err)
		}
		return nil
	})
	pod := locallyGatedPod(t, ns, "stranded")

	setDeploymentStatusIn(t, ns, operator.LocalControllerComponentName, 0)
	eventually(t, failOpenGracePeriod+30*time.Second, "entry removed and local gate released", func() error {
		if e, err := localEntry(ns); err != nil || e != nil {
			return fmt.Errorf("entry still registered (err %v)", err)
		}
		got := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		if len(got.Spec.SchedulingGates) > 0 || got.Labels[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueReleased {
			return fmt.Errorf("pod gates %v, labels %v", got.Spec.SchedulingGates, got.Labels)
		}
		return nil
	})

	setDeploymentStatusIn(t, ns, operator.LocalControllerComponentName, 1)
	eventually(t, 30*time.Second, "local webhook entry registered again", func() error {
		if e, err := localEntry(ns); err != nil || e == nil {
			return fmt.Errorf("no entry (err %v)", err)
		}
		return nil
	})
}
