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
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/pkg/testing/metricsreader"
)

// prometheusSA is the ServiceAccount the tests scrape metrics as, bound to the metrics reader
// ClusterRole.
const prometheusSA = "prometheus"

// access is one question to the apiserver's authorizer: may the ServiceAccount do verb on
// resource (in namespace, on the object called name)?
type access struct {
	sa                                     string // ServiceAccount name in testNamespace
	verb, group, resource, namespace, name string
	// path is a non-resource URL (resource, group, namespace and name are then unused).
	path string
	want bool
}

func (a access) String() string {
	if a.path != "" {
		return fmt.Sprintf("%s %s %s", a.sa, a.verb, a.path)
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	what := a.resource
	if a.group != "" {
		what += "." + a.group
	}
	if a.name != "" {
		what += "/" + a.name
	}
	return fmt.Sprintf("%s %s %s %s", a.sa, a.verb, what, where)
}

// allowed asks the apiserver, with a SubjectAccessReview, whether the ServiceAccount may do it.
func (a access) allowed(ctx context.Context) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + testNamespace + ":" + a.sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testNamespace, "system:authenticated"},
	}}
	if a.path != "" {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: a.verb, Path: a.path}
	} else {
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Namespace: a.namespace, Name: a.name,
		}
	}
	if err := k8s.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// TestLeastPrivilege installs the components with a global pull secret and asks the
// apiserver, as each ServiceAccount with the RBAC the operator (operator/config/rbac) and the
// reconciler render, what it may do.
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	const pullNS, pullName = "rbac-pull", "pull-secret"
	for _, ns := range []string{pullNS, "rbac-moved"} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{pullNS, "rbac-moved"} {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pullName},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"dTpw"}}}`)},
		}
		if err := k8s.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	install(t, v1beta1.ClusterPodPlacementConfigSpec{
		GlobalPullSecretRef: &v1beta1.NamespacedObjectReference{Namespace: pullNS, Name: pullName},
	})
	// A Prometheus, bound to the metrics reader role of operator/config/rbac.
	if err := metricsreader.Grant(ctx, env.Config, metricsreader.Reader{Namespace: testNamespace, ServiceAccount: prometheusSA}); err != nil {
		t.Fatal(err)
	}

	const (
		ctl = operator.ControllerComponentName
		op  = "archgate-operator"
		wh  = operator.WebhookComponentName
		rb  = rbacv1.GroupName
		adm = "admissionregistration.k8s.io"
		prm = prometheusSA
		tr  = "tokenreviews"
		sar = "subjectaccessreviews"
		atn = "authentication.k8s.io"
		atz = "authorization.k8s.io"
	)
	table := []access{
		// The controller: pods it gates, pull secrets one by one, the global one too: no list or
		// watch of any Secret.
		{sa: ctl, verb: "list", resource: "secrets", want: false},
		{sa: ctl, verb: "watch", resource: "secrets", want: false},
		{sa: ctl, verb: "list", resource: "secrets", namespace: "team-a", want: false},
		{sa: ctl, verb: "list", resource: "secrets", namespace: pullNS, want: false},
		{sa: ctl, verb: "list", resource: "secrets", namespace: pullNS, name: pullName, want: false},
		{sa: ctl, verb: "watch", resource: "secrets", namespace: pullNS, name: pullName, want: false},
		{sa: ctl, verb: "get", resource: "secrets", namespace: pullNS, name: pullName, want: true},
		{sa: ctl, verb: "list", resource: "secrets", namespace: testNamespace, want: false},
		{sa: ctl, verb: "get", resource: "secrets", namespace: "team-a", name: "regcred", want: true},
		{sa: ctl, verb: "create", resource: "secrets", namespace: pullNS, want: false},
		{sa: ctl, verb: "update", resource: "secrets", namespace: pullNS, name: pullName, want: false},
		{sa: ctl, verb: "patch", resource: "pods", namespace: "team-a", name: "p", want: true},
		{sa: ctl, verb: "update", resource: "pods", namespace: "team-a", name: "p", want: false},
		{sa: ctl, verb: "delete", resource: "pods", namespace: "team-a", name: "p", want: false},
		{sa: ctl, verb: "list", resource: "configmaps", want: false},
		{sa: ctl, verb: "patch", resource: "configmaps", namespace: testNamespace, name: operator.KnownImagesName, want: true},
		// The admission policy's params only with spec.admissionPolicy Enabled (TestAdmissionPolicyRollout).
		{sa: ctl, verb: "patch", resource: "configmaps", namespace: testNamespace, name: operator.PlacementParametersName, want: false},
		{sa: ctl, verb: "patch", resource: "configmaps", namespace: testNamespace, name: "other", want: false},
		{sa: ctl, verb: "create", resource: "configmaps", namespace: testNamespace, want: false},
		{sa: ctl, verb: "create", resource: "events", group: "events.k8s.io", namespace: "team-a", want: true},
		{sa: ctl, verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: testNamespace, name: "archgate-controller", want: true},
		{sa: ctl, verb: "create", resource: "leases", group: "coordination.k8s.io", namespace: "team-a", want: false},
		{sa: ctl, verb: "update", resource: "clusterpodplacementconfigs", group: v1beta1.GroupName, name: v1beta1.SingletonName, want: false},
		// Nodes only with the exec-format-error monitor (checked below, once it is enabled).
		{sa: ctl, verb: "list", resource: "nodes", want: false},

		// The operator: cluster-scoped writes only to the objects it owns.
		{sa: op, verb: "delete", resource: "clusterroles", group: rb, name: "cluster-admin", want: false},
		{sa: op, verb: "patch", resource: "clusterroles", group: rb, name: "cluster-admin", want: false},
		{sa: op, verb: "update", resource: "clusterrolebindings", group: rb, name: "cluster-admin", want: false},
		{sa: op, verb: "create", resource: "clusterroles", group: rb, want: false},
		{sa: op, verb: "patch", resource: "clusterroles", group: rb, name: operator.ControllerComponentName, want: true},
		{sa: op, verb: "delete", resource: "clusterrolebindings", group: rb, name: operator.ControllerComponentName, want: true},
		{sa: op, verb: "patch", resource: "roles", group: rb, namespace: "kube-system", name: "extension-apiserver-authentication-reader", want: false},
		{sa: op, verb: "patch", resource: "rolebindings", group: rb, namespace: pullNS, name: operator.ControllerPullSecretRoleName, want: false},
		{sa: op, verb: "delete", resource: "rolebindings", group: rb, namespace: pullNS, name: operator.ControllerPullSecretRoleName, want: true},
		// The operator's Secret reads: get (it grants the controller that) and its own
		// namespace's list and watch; nobody else's listed or watched.
		{sa: op, verb: "list", resource: "secrets", want: false},
		{sa: op, verb: "watch", resource: "secrets", want: false},
		{sa: op, verb: "watch", resource: "secrets", namespace: pullNS, want: false},
		{sa: op, verb: "list", resource: "secrets", namespace: "team-a", want: false},
		{sa: op, verb: "watch", resource: "secrets", namespace: testNamespace, want: true},
		{sa: op, verb: "get", resource: "secrets", namespace: pullNS, name: pullName, want: true},
		{sa: op, verb: "create", resource: "rolebindings", group: rb, namespace: "team-a", want: false},
		{sa: op, verb: "delete", resource: "mutatingwebhookconfigurations", group: adm, name: "someone-elses", want: false},
		{sa: op, verb: "delete", resource: "mutatingwebhookconfigurations", group: adm, name: operator.DefaultMutatingWebhookConfigurationName, want: true},
		{sa: op, verb: "create", resource: "mutatingwebhookconfigurations", group: adm, want: false},
		// OpenShift's mirror sets: the operator reads them, writes none, and the components do
		// not even read them (the controller gets the rendered drop-in).
		{sa: op, verb: "watch", resource: "imagedigestmirrorsets", group: "config.openshift.io", want: true},
		{sa: op, verb: "list", resource: "imagetagmirrorsets", group: "config.openshift.io", want: true},
		{sa: op, verb: "update", resource: "imagedigestmirrorsets", group: "config.openshift.io", name: "any", want: false},
		{sa: op, verb: "delete", resource: "imagetagmirrorsets", group: "config.openshift.io", name: "any", want: false},
		{sa: ctl, verb: "list", resource: "imagedigestmirrorsets", group: "config.openshift.io", want: false},
		{sa: wh, verb: "list", resource: "imagetagmirrorsets", group: "config.openshift.io", want: false},
		{sa: op, verb: "update", resource: "validatingwebhookconfigurations", group: adm, name: "someone-elses", want: false},
		{sa: op, verb: "patch", resource: "validatingwebhookconfigurations", group: adm, name: operator.DefaultValidatingWebhookConfigurationName, want: true},
		{sa: op, verb: "delete", resource: "validatingwebhookconfigurations", group: adm, name: operator.DefaultValidatingWebhookConfigurationName, want: false},
		{sa: op, verb: "update", resource: "pods", namespace: "team-a", name: "p", want: false},
		{sa: op, verb: "patch", resource: "pods", namespace: "team-a", name: "p", want: true},
		{sa: op, verb: "delete", resource: "pods", namespace: "team-a", name: "p", want: false},
		{sa: op, verb: "create", resource: "secrets", namespace: "team-a", want: false},
		{sa: op, verb: "delete", resource: "deployments", group: "apps", namespace: "team-a", name: "d", want: false},
		{sa: op, verb: "patch", resource: "deployments", group: "apps", namespace: testNamespace, name: operator.ControllerComponentName, want: true},

		// The webhook reads the placement configurations and the known-images ConfigMap, nothing else.
		{sa: wh, verb: "list", resource: "podplacementconfigs", group: v1beta1.GroupName, want: true},
		{sa: wh, verb: "watch", resource: "clusterpodplacementconfigs", group: v1beta1.GroupName, want: true},
		{sa: wh, verb: "update", resource: "podplacementconfigs", group: v1beta1.GroupName, namespace: "team-a", name: "c", want: false},
		{sa: wh, verb: "watch", resource: "configmaps", namespace: testNamespace, name: operator.KnownImagesName, want: true},
		{sa: wh, verb: "list", resource: "configmaps", namespace: testNamespace, want: false},
		{sa: wh, verb: "patch", resource: "configmaps", namespace: testNamespace, name: operator.KnownImagesName, want: false},
		{sa: wh, verb: "get", resource: "pods", namespace: "team-a", name: "p", want: false},
		{sa: wh, verb: "list", resource: "secrets", want: false},
		{sa: wh, verb: "get", resource: "secrets", namespace: pullNS, name: pullName, want: false},

		// Metrics: every component reviews its clients' tokens and access; only the reader
		// role may get /metrics, and it grants nothing else.
		{sa: op, verb: "create", resource: tr, group: atn, want: true},
		{sa: op, verb: "create", resource: sar, group: atz, want: true},
		{sa: ctl, verb: "create", resource: tr, group: atn, want: true},
		{sa: ctl, verb: "create", resource: sar, group: atz, want: true},
		{sa: wh, verb: "create", resource: tr, group: atn, want: true},
		{sa: wh, verb: "create", resource: sar, group: atz, want: true},
		{sa: ctl, verb: "get", path: "/metrics", want: false},
		{sa: wh, verb: "get", path: "/metrics", want: false},
		{sa: prm, verb: "get", path: "/metrics", want: true},
		{sa: prm, verb: "get", path: "/debug/pprof/heap", want: false},
		{sa: prm, verb: "create", resource: tr, group: atn, want: false},
		{sa: prm, verb: "list", resource: "pods", want: false},
		{sa: prm, verb: "get", resource: "secrets", namespace: pullNS, name: pullName, want: false},
	}
	var report strings.Builder
	for _, a := range table {
		got, err := a.allowed(ctx)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		fmt.Fprintf(&report, "%-80s %v\n", a, map[bool]string{true: "allowed", false: "denied"}[got])
		if got != a.want {
			t.Errorf("%s: allowed %t, want %t", a, got, a.want)
		}
	}
	t.Logf("SubjectAccessReviews:\n%s", report.String())

	// The exec-format-error monitor adds a read of nodes (their architecture label), nothing else.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.Plugins = &v1beta1.Plugins{ExecFormatErrorMonitor: &v1beta1.ExecFormatErrorMonitor{Enabled: true}}
	})
	eventually(t, 30*time.Second, "nodes read granted with the monitor", func() error {
		for _, a := range []access{
			{sa: ctl, verb: "watch", resource: "nodes", want: true},
			{sa: ctl, verb: "get", resource: "nodes", name: "n", want: true},
			{sa: ctl, verb: "patch", resource: "nodes", name: "n", want: false},
			{sa: ctl, verb: "update", resource: "pods", namespace: "team-a", name: "p", want: false},
			{sa: ctl, verb: "delete", resource: "pods", namespace: "team-a", name: "p", want: false},
		} {
			if got, err := a.allowed(ctx); err != nil || got != a.want {
				return fmt.Errorf("%s: allowed %t (err %v)", a, got, err)
			}
		}
		return nil
	})

	// Its action DeletePod binds the pod-deleter role to the controller, and only while it is
	// set; the operator binds the role without being able to delete pods itself.
	setAction := func(action v1beta1.ExecFormatErrorAction) {
		updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.Plugins.ExecFormatErrorMonitor.Action = action })
	}
	for _, step := range []struct {
		action v1beta1.ExecFormatErrorAction
		delete bool
	}{{v1beta1.ExecFormatErrorActionDeletePod, true}, {v1beta1.ExecFormatErrorActionReport, false}} {
		setAction(step.action)
		eventually(t, 30*time.Second, fmt.Sprintf("pod delete %t with action %s", step.delete, step.action), func() error {
			for _, a := range []access{
				{sa: ctl, verb: "delete", resource: "pods", namespace: "team-a", name: "p", want: step.delete},
				{sa: op, verb: "delete", resource: "pods", namespace: "team-a", name: "p", want: false},
			} {
				if got, err := a.allowed(ctx); err != nil || got != a.want {
					return fmt.Errorf("%s: allowed %t (err %v)", a, got, err)
				}
			}
			return nil
		})
	}

	// No Role grants the controller a watch of the global pull secret, wherever it is.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.GlobalPullSecretRef = &v1beta1.NamespacedObjectReference{Namespace: "rbac-moved", Name: pullName}
	})
	eventually(t, 30*time.Second, "the moved pull secret readable by name only", func() error {
		if d := getDeployment(t, operator.ControllerComponentName); !containsArg(d.Spec.Template.Spec.Containers[0].Args, "--global-pull-secret=rbac-moved/"+pullName) {
			return fmt.Errorf("controller args %q", d.Spec.Template.Spec.Containers[0].Args)
		}
		for _, a := range []access{
			{sa: ctl, verb: "get", resource: "secrets", namespace: "rbac-moved", name: pullName, want: true},
			{sa: ctl, verb: "watch", resource: "secrets", namespace: "rbac-moved", name: pullName, want: false},
		} {
			if got, err := a.allowed(ctx); err != nil || got != a.want {
				return fmt.Errorf("%s: allowed %t (err %v)", a, got, err)
			}
		}
		for _, ns := range []string{pullNS, "rbac-moved"} {
			if err := k8s.Get(ctx, key(ns, operator.ControllerPullSecretRoleName), &rbacv1.Role{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pull-secret Role in %s (err %v)", ns, err)
			}
		}
		return nil
	})
}
