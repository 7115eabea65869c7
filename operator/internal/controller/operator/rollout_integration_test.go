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
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

func TestRollout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	created := watchCreations(t, ctx)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{gateLabel: "on"}}
	cppc := createCluster(t, v1beta1.ClusterPodPlacementConfigSpec{NamespaceSelector: selector})

	// The components appear, the webhook registration does not: no Deployment is available.
	wh := getDeployment(t, operator.WebhookComponentName)
	ctl := getDeployment(t, operator.ControllerComponentName)
	wantCondition(t, v1beta1.ConditionProgressing, metav1.ConditionTrue, v1beta1.ReasonRollingOut)
	wantCondition(t, v1beta1.ConditionAvailable, metav1.ConditionFalse, v1beta1.ReasonComponentsUnavailable)
	wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
	wantCondition(t, v1beta1.ConditionLinkedObjectsExist, metav1.ConditionTrue, v1beta1.ReasonAsExpected)
	wantCondition(t, v1beta1.ConditionDeprovisioning, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
	if got := getCluster(t); !strings.Contains(cond(got, v1beta1.ConditionProgressing).Message, "waiting for deployments") {
		t.Errorf("Progressing message does not say what the rollout waits for: %q", cond(got, v1beta1.ConditionProgressing).Message)
	}
	consistently(t, time.Second, "webhook registered before any Deployment is available", webhookNotRegistered)

	// The components as specified.
	if *wh.Spec.Replicas != 3 || *ctl.Spec.Replicas != 2 {
		t.Errorf("replicas: webhook %d, controller %d; want 3 and 2", *wh.Spec.Replicas, *ctl.Spec.Replicas)
	}
	for _, d := range []struct {
		name string
		args []string
		want []string
	}{
		{operator.WebhookComponentName, wh.Spec.Template.Spec.Containers[0].Args, []string{"webhook", "--log-verbosity=Normal", "--cert-dir=" + operator.ServingCertDir, "--operator-namespace=" + testNamespace}},
		{operator.ControllerComponentName, ctl.Spec.Template.Spec.Containers[0].Args, []string{"controller", "--log-verbosity=Normal", "--leader-elect", "--operator-namespace=" + testNamespace}},
	} {
		for _, w := range d.want {
			if !containsArg(d.args, w) {
				t.Errorf("%s args %q lack %q", d.name, d.args, w)
			}
		}
	}
	// The Go runtime sized from the container's memory limit (sizing.go), as applied.
	for _, d := range []struct {
		name string
		env  []corev1.EnvVar
		want []corev1.EnvVar
	}{
		{operator.WebhookComponentName, wh.Spec.Template.Spec.Containers[0].Env, []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "230MiB"}, {Name: "GOGC", Value: "50"}}},
		{operator.ControllerComponentName, ctl.Spec.Template.Spec.Containers[0].Env, []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "460MiB"}}},
	} {
		for _, w := range d.want {
			if !slices.Contains(d.env, w) {
				t.Errorf("%s env %v lacks %v", d.name, d.env, w)
			}
		}
	}
	if img := wh.Spec.Template.Spec.Containers[0].Image; img != testImage {
		t.Errorf("webhook image %q, want %q", img, testImage)
	}
	secrets := map[string]string{}
	for _, v := range wh.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if want := map[string]string{"serving-cert": operator.WebhookServingSecretName, "metrics-cert": operator.WebhookMetricsSecretName}; !maps.Equal(secrets, want) {
		t.Errorf("webhook Secret volumes %v, want the serving and the metrics certificates %v", secrets, want)
	}
	for _, d := range []string{operator.WebhookComponentName, operator.ControllerComponentName} {
		dep := getDeployment(t, d)
		if len(dep.OwnerReferences) != 1 || dep.OwnerReferences[0].UID != cppc.UID || !*dep.OwnerReferences[0].Controller {
			t.Errorf("Deployment %s owner references %+v, want the ClusterPodPlacementConfig", d, dep.OwnerReferences)
		}
		if mf := dep.ManagedFields; len(mf) == 0 || mf[0].Manager != operator.FieldOwner || mf[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("Deployment %s is not server-side applied by %s: %+v", d, operator.FieldOwner, mf)
		}
	}

	// One Deployment available is not enough.
	setDeploymentStatus(t, operator.WebhookComponentName, operator.WebhookReplicas)
	consistently(t, time.Second, "webhook registered with the controller unavailable", webhookNotRegistered)

	// Both available: the webhook is registered, failing open, with the CR's selector.
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas)
	eventually(t, 30*time.Second, "webhook registered", webhookRegistered)
	available := wantCondition(t, v1beta1.ConditionAvailable, metav1.ConditionTrue, v1beta1.ReasonAllComponentsReady)
	wantCondition(t, v1beta1.ConditionProgressing, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
	t.Logf("Available: %s", available.Message)
	mwc, err := mutatingWebhookConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	assertWebhookConfiguration(t, mwc, selector)

	// The creations happened step by step.
	created.assertOrder(t,
		[]string{"ServiceAccount/" + operator.WebhookComponentName, "ServiceAccount/" + operator.ControllerComponentName, "ClusterRole/" + operator.ControllerComponentName,
			"ClusterRoleBinding/" + operator.ControllerComponentName, "Role/" + operator.ControllerComponentName, "RoleBinding/" + operator.ControllerComponentName},
		[]string{"Service/" + operator.WebhookComponentName, "Secret/" + operator.WebhookServingSecretName},
		[]string{"PodDisruptionBudget/" + operator.WebhookComponentName, "PodDisruptionBudget/" + operator.ControllerComponentName, "Deployment/" + operator.WebhookComponentName, "Deployment/" + operator.ControllerComponentName},
		[]string{"MutatingWebhookConfiguration/" + operator.DefaultMutatingWebhookConfigurationName},
	)

	// logVerbosity reaches the components: new arguments, a new rollout.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.LogVerbosity = v1beta1.LogVerbosityTrace })
	eventually(t, 30*time.Second, "verbosity in the arguments", func() error {
		for _, name := range []string{operator.WebhookComponentName, operator.ControllerComponentName} {
			if args := getDeployment(t, name).Spec.Template.Spec.Containers[0].Args; !containsArg(args, "--log-verbosity=Trace") {
				return fmt.Errorf("%s args %q", name, args)
			}
		}
		return nil
	})
	wantCondition(t, v1beta1.ConditionProgressing, metav1.ConditionTrue, v1beta1.ReasonRollingOut)
	setDeploymentStatus(t, operator.WebhookComponentName, operator.WebhookReplicas)
	setDeploymentStatus(t, operator.ControllerComponentName, operator.ControllerReplicas)
	wantCondition(t, v1beta1.ConditionProgressing, metav1.ConditionFalse, v1beta1.ReasonAsExpected)

	// A new namespace selector reaches the registration.
	opt := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: gateLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"on", "yes"}}}}
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.NamespaceSelector = opt })
	eventually(t, 30*time.Second, "selector updated", func() error {
		mwc, err := mutatingWebhookConfiguration()
		if err != nil {
			return err
		}
		if got := mwc.Webhooks[0].NamespaceSelector.MatchExpressions[0]; got.Key != gateLabel || len(got.Values) != 2 {
			return fmt.Errorf("selector %+v", mwc.Webhooks[0].NamespaceSelector)
		}
		return nil
	})

	// The controller loses its pods: the webhook stays registered for the grace period (the
	// operator has seen the loss: Available is False), then fails open, Degraded says why;
	// back: registered again.
	setDeploymentStatus(t, operator.ControllerComponentName, 0)
	wantCondition(t, v1beta1.ConditionAvailable, metav1.ConditionFalse, v1beta1.ReasonComponentsUnavailable)
	if err := webhookRegistered(); err != nil {
		t.Errorf("webhook unregistered within the %v grace period: %v", failOpenGracePeriod, err)
	}
	eventually(t, failOpenGracePeriod+30*time.Second, "webhook unregistered", webhookNotRegistered)
	degraded := wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonWebhookUnregistered)
	wantCondition(t, v1beta1.ConditionAvailable, metav1.ConditionFalse, v1beta1.ReasonComponentsUnavailable)
	if !strings.Contains(degraded.Message, "Deployment "+testNamespace+"/"+operator.ControllerComponentName+" has 0 of 2 replicas available") {
		t.Errorf("Degraded message does not name the Deployment: %q", degraded.Message)
	}
	setDeploymentStatus(t, operator.ControllerComponentName, 1)
	eventually(t, 30*time.Second, "webhook registered again", webhookRegistered)
	wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
	wantCondition(t, v1beta1.ConditionAvailable, metav1.ConditionTrue, v1beta1.ReasonAllComponentsReady)

	// Drift is repaired: a deleted component comes back.
	if err := k8s.Delete(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: operator.ControllerComponentName}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ServiceAccount recreated", func() error {
		return k8s.Get(context.Background(), key(testNamespace, operator.ControllerComponentName), &corev1.ServiceAccount{})
	})
}

func cond(c *v1beta1.ClusterPodPlacementConfig, typ string) metav1.Condition {
	for _, x := range c.Status.Conditions {
		if x.Type == typ {
			return x
		}
	}
	return metav1.Condition{}
}

func updateCluster(t *testing.T, mutate func(*v1beta1.ClusterPodPlacementConfig)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := getCluster(t)
		mutate(c)
		return k8s.Update(context.Background(), c)
	})
	if err != nil {
		t.Fatalf("updating ClusterPodPlacementConfig: %v", err)
	}
}

// assertWebhookConfiguration checks the registration: fail open, no side effects, the CR's
// selector, and a CA bundle that verifies the webhook's serving certificate.
func assertWebhookConfiguration(t *testing.T, mwc *admissionregistrationv1.MutatingWebhookConfiguration, selector *metav1.LabelSelector) {
	t.Helper()
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(mwc.Webhooks))
	}
	w := mwc.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.SideEffects != admissionregistrationv1.SideEffectClassNone || *w.TimeoutSeconds > 10 {
		t.Errorf("failurePolicy %s sideEffects %s timeout %d; want Ignore, None, at most 10s", *w.FailurePolicy, *w.SideEffects, *w.TimeoutSeconds)
	}
	if diff := cmp.Diff(selector.MatchLabels, w.NamespaceSelector.MatchLabels); diff != "" {
		t.Errorf("namespaceSelector (-want +got):\n%s", diff)
	}
	if s := w.ClientConfig.Service; s == nil || s.Namespace != testNamespace || s.Name != operator.WebhookComponentName {
		t.Errorf("clientConfig.service %+v", s)
	}
	secret := &corev1.Secret{}
	if err := k8s.Get(context.Background(), key(testNamespace, operator.WebhookServingSecretName), secret); err != nil {
		t.Fatal(err)
	}
	leaf, err := certs.ParseCertificates(secret.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(w.ClientConfig.CABundle) {
		t.Fatal("caBundle holds no certificate")
	}
	if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: operator.WebhookComponentName + "." + testNamespace + ".svc"}); err != nil {
		t.Errorf("the webhook's serving certificate does not verify against the registered caBundle: %v", err)
	}
}
