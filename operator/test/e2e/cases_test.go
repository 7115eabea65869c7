//go:build e2e

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

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/realnode"
)

// testAMD64OnRealNode: a Deployment's pod of the registry's amd64-only image is gated by the
// webhook (called through its Service over TLS), inspected in the registry, and runs on the
// real node after a pull over TLS.
func testAMD64OnRealNode(ctx context.Context, e *env) {
	pod := e.podStart(ctx, "gated", "with archgate")
	e.checkPlaced(pod, "amd64")
	if pod.Spec.NodeName != realnode.NodeName {
		e.t.Errorf("pod %s/%s on node %q, want %s", pod.Namespace, pod.Name, pod.Spec.NodeName, realnode.NodeName)
	}
}

// testARM64OnFakeNode: pods of an arm64-only image (tolerating the kwok taint, so that any of
// the four nodes would do without archgate) are placed on the arm64 node and become Running.
func testARM64OnFakeNode(ctx context.Context, e *env) {
	ns := e.newNamespace(ctx, "arm64")
	e.createDeployment(ctx, ns, "app", 3, onFakeNodes(arm64Only))
	for _, pod := range e.waitPods(ctx, ns, 3, "Running", isRunning) {
		e.checkPlaced(&pod, "arm64")
		if want := realnode.FakeNodeName("arm64"); pod.Spec.NodeName != want {
			e.t.Errorf("pod %s/%s on node %q, want %s", pod.Namespace, pod.Name, pod.Spec.NodeName, want)
		}
	}
}

// testUnschedulable: a riscv64-only image (no such node) gets its architecture required and
// the scheduler says no node matches; a pod whose images share no architecture (amd64-only and
// arm64-only) stays Pending with archgate's NoCommonArchitecture Event.
func testUnschedulable(ctx context.Context, e *env) {
	ns := e.newNamespace(ctx, "nowhere")
	e.createDeployment(ctx, ns, "riscv64", 1, onFakeNodes(riscv64Only))
	e.createDeployment(ctx, ns, "mixed", 1, onFakeNodes(pause, arm64Only))
	for _, pod := range e.waitPods(ctx, ns, 2, "Unschedulable", unschedulable) {
		cond := podScheduled(&pod)
		e.t.Logf("pod %s (%s): phase %s, PodScheduled %s: %s", pod.Name, pod.Labels[v1beta1.LabelPlacement], pod.Status.Phase, cond.Reason, cond.Message)
		if pod.Status.Phase != corev1.PodPending || !strings.Contains(cond.Message, "node affinity") {
			e.t.Errorf("pod %s/%s: phase %s, PodScheduled %q, want Pending and no node matching its node affinity", ns, pod.Name, pod.Status.Phase, cond.Message)
		}
		switch pod.Labels["app"] {
		case "riscv64":
			e.checkPlaced(&pod, "riscv64")
		case "mixed":
			if got := pod.Labels[v1beta1.LabelPlacement]; got != v1beta1.PlacementNoCommonArch {
				e.t.Errorf("pod %s/%s label %s = %q, want %q", ns, pod.Name, v1beta1.LabelPlacement, got, v1beta1.PlacementNoCommonArch)
			}
			e.waitEvent(ctx, &pod, "NoCommonArchitecture")
		}
	}
}

func podScheduled(p *corev1.Pod) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c
		}
	}
	return corev1.PodCondition{}
}

// waitEvent waits for an Event of the given reason about the pod and logs it.
func (e *env) waitEvent(ctx context.Context, pod *corev1.Pod, reason string) {
	e.t.Helper()
	selector := fields.Set{"involvedObject.name": pod.Name, "reason": reason}.String()
	e.waitFor(ctx, reason+" Event of pod "+pod.Name, func() bool {
		events, err := e.cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil || len(events.Items) == 0 {
			return false
		}
		e.t.Logf("Event %s of pod %s: %s", reason, pod.Name, events.Items[0].Message)
		return true
	})
}

// testPrivateImage: the same private arm64-only image is placed on the arm64 node when the pod
// has the pull secret; without it inspection fails (401) and the pod is released unplaced after
// the retry budget, with the reason in its annotation.
func testPrivateImage(ctx context.Context, e *env) {
	ns := e.newNamespace(ctx, "private")
	e.createPullSecret(ctx, ns, "registry-creds")
	withSecret := onFakeNodes(privateARM)
	withSecret.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-creds"}}
	e.createDeployment(ctx, ns, "with-secret", 1, withSecret)
	e.createDeployment(ctx, ns, "without-secret", 1, onFakeNodes(privateARM))

	placed := e.waitPods(ctx, ns, 1, "Running with the pull secret", func(p *corev1.Pod) bool {
		return p.Labels["app"] == "with-secret" && isRunning(p)
	})[0]
	e.checkPlaced(&placed, "arm64")
	released := e.waitPods(ctx, ns, 1, "released without the pull secret", func(p *corev1.Pod) bool {
		return p.Labels["app"] == "without-secret" && ungated(p)
	})[0]
	e.t.Logf("without the pull secret: %s=%s, %s=%q", v1beta1.LabelPlacement, released.Labels[v1beta1.LabelPlacement],
		v1beta1.AnnotationInspectionError, released.Annotations[v1beta1.AnnotationInspectionError])
	if got := released.Labels[v1beta1.LabelPlacement]; got != v1beta1.PlacementInspectionFailed {
		e.t.Errorf("pod %s/%s without pull secret: label %s = %q, want %q", ns, released.Name, v1beta1.LabelPlacement, got, v1beta1.PlacementInspectionFailed)
	}
	if got := requiredArchitectures(&released); len(got) != 0 {
		e.t.Errorf("pod %s/%s without pull secret requires kubernetes.io/arch in %v, want no requirement", ns, released.Name, got)
	}
}

// createPullSecret creates a kubernetes.io/dockerconfigjson Secret for the cluster's registry
// user.
func (e *env) createPullSecret(ctx context.Context, ns, name string) {
	e.t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(realnode.PrivateUser + ":" + realnode.PrivatePassword))
	config, err := json.Marshal(map[string]any{"auths": map[string]any{realnode.Registry: map[string]string{"auth": auth}}})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

// testLeastPrivilege: every archgate pod runs as its own ServiceAccount with a projected token
// (the cluster authorizes with Node,RBAC only: what they did so far, they did with the shipped
// RBAC), none is bound to cluster-admin, and none may do everything.
func testLeastPrivilege(ctx context.Context, e *env) {
	pods, err := e.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	accounts := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.ServiceAccountName == "" || p.Spec.ServiceAccountName == "default" || !hasProjectedToken(&p) {
			e.t.Errorf("pod %s/%s: ServiceAccount %q, projected token %v; want its own ServiceAccount and token", namespace, p.Name, p.Spec.ServiceAccountName, hasProjectedToken(&p))
		}
		accounts[p.Spec.ServiceAccountName] = true
	}
	e.t.Logf("ServiceAccounts of archgate's pods: %v", keys(accounts))
	e.checkNoClusterAdmin(ctx, accounts)
	for sa := range accounts {
		user := "system:serviceaccount:" + namespace + ":" + sa
		review, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}},
		}, metav1.CreateOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		if review.Status.Allowed {
			e.t.Errorf("%s may do every verb on every resource (%s)", user, review.Status.Reason)
		}
	}
}

func hasProjectedToken(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

// checkNoClusterAdmin checks that no ClusterRoleBinding or RoleBinding grants cluster-admin to
// one of the accounts.
func (e *env) checkNoClusterAdmin(ctx context.Context, accounts map[string]bool) {
	e.t.Helper()
	crbs, err := e.cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	rbs, err := e.cs.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	type binding struct {
		name, role string
		subjects   []string
	}
	var all []binding
	for _, b := range crbs.Items {
		all = append(all, binding{"ClusterRoleBinding " + b.Name, b.RoleRef.Name, serviceAccounts(b.Subjects)})
	}
	for _, b := range rbs.Items {
		all = append(all, binding{"RoleBinding " + namespace + "/" + b.Name, b.RoleRef.Name, serviceAccounts(b.Subjects)})
	}
	for _, b := range all {
		for _, s := range b.subjects {
			if accounts[s] && b.role == "cluster-admin" {
				e.t.Errorf("%s grants cluster-admin to ServiceAccount %s/%s", b.name, namespace, s)
			}
		}
	}
}

// serviceAccounts returns the names of the subjects that are ServiceAccounts of archgate's
// namespace.
func serviceAccounts(subjects []rbacv1.Subject) []string {
	var out []string
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace {
			out = append(out, s.Name)
		}
	}
	return out
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
