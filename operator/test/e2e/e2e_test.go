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

// Package e2e installs archgate on the real-node cluster (operator/pkg/testing/realnode) exactly as a
// user does (`make deploy`, `make undeploy`) and checks what happens to real pods. Run it with
// `make e2e` (after `make cluster-up`; it starts the cluster when none runs).
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/realnode"
)

const (
	// image is archgate's image as `make e2e` imports it (IMAGE_TAG=e2e: not "latest", so the
	// kubelet's default pull policy is IfNotPresent and no registry is needed).
	image = "localhost/archgate/archgate:e2e"
	// pause is a linux/amd64-only image in the cluster's registry, pulled by the kubelet over TLS.
	pause     = realnode.Registry + "/archgate/pause:1"
	namespace = "archgate-system"
)

var repoRoot = filepath.Join("..", "..", "..")

type env struct {
	t   *testing.T
	cs  kubernetes.Interface
	dyn dynamic.Interface
	cfg string // kubeconfig
}

// TestDeployPlaceUndeploy installs archgate as a user would, checks each behaviour the issue
// lists on real pods (subtests, in order: they share the installation), then uninstalls it.
func TestDeployPlaceUndeploy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute) // inside make e2e's -timeout=20m: a hang fails with the wait it was in
	defer cancel()
	c, err := realnode.Up(ctx, realnode.Options{RepoRoot: repoRoot})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ImportImage(ctx, filepath.Join(repoRoot, "bin", "image.tar"), "localhost/archgate/archgate"); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cs: kubernetes.NewForConfigOrDie(c.Config), dyn: dynamic.NewForConfigOrDie(c.Config), cfg: c.Kubeconfig}
	e.checkFakeNodes(ctx)

	without := e.podStart(ctx, "plain", "without archgate")

	start := time.Now()
	e.make(ctx, "deploy", "IMG="+image)
	e.waitAvailable(ctx, namespace, "archgate-operator")
	t.Logf("figure: make deploy to operator Available: %s", time.Since(start).Round(time.Millisecond))

	ca, err := c.RegistryCA()
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	e.createSample(ctx, ca)
	e.waitAvailable(ctx, namespace, "archgate-webhook")
	e.waitAvailable(ctx, namespace, "archgate-controller")
	e.waitSampleCondition(ctx, v1beta1.ConditionAvailable)
	t.Logf("figure: ClusterPodPlacementConfig to Available (webhook and controller rolled out, webhook registered): %s", time.Since(start).Round(time.Millisecond))
	// The real apiserver (v1.37) applies MutatingAdmissionPolicy: the pods below are placed or
	// gated by archgate's policy, the webhook called only for those it leaves alone.
	e.waitSampleCondition(ctx, v1beta1.ConditionAdmissionPolicyInEffect)
	t.Logf("figure: ClusterPodPlacementConfig to AdmissionPolicyInEffect: %s", time.Since(start).Round(time.Millisecond))

	if got := without.Labels[v1beta1.LabelSchedulingGate]; got != "" {
		t.Errorf("pod created before the install carries %s=%q", v1beta1.LabelSchedulingGate, got)
	}
	e.run(ctx, "amd64-only image runs on the real node", testAMD64OnRealNode)
	e.run(ctx, "arm64-only image lands on the kwok arm64 node", testARM64OnFakeNode)
	e.run(ctx, "images no node can run stay Pending with the reason", testUnschedulable)
	e.run(ctx, "private image placed only with its pull secret", testPrivateImage)
	e.run(ctx, "no archgate component runs as cluster-admin", testLeastPrivilege)
	e.run(ctx, "controller leader failover leaves nothing gated", testLeaderFailover)
	e.run(ctx, "webhook rolling update under load admits no pod ungated", testWebhookRollingUpdate)
	e.run(ctx, "exec format error of a pod pinned to the real node is detected", testExecFormatError)

	start = time.Now()
	e.make(ctx, "undeploy")
	t.Logf("figure: make undeploy: %s", time.Since(start).Round(time.Millisecond))
	e.checkNothingLeft(ctx)
	if gated := e.gatedPods(ctx); len(gated) != 0 {
		t.Errorf("pods still gated after make undeploy: %v", gated)
	}
}

// run runs one behaviour as a subtest sharing the installation and the test's deadline; the
// subtest's env reports to the subtest.
func (e *env) run(ctx context.Context, name string, f func(ctx context.Context, e *env)) {
	e.t.Run(name, func(t *testing.T) {
		sub := *e
		sub.t = t
		f(ctx, &sub)
	})
}

// make runs a Makefile target against the cluster, exactly as a user would.
func (e *env) make(ctx context.Context, args ...string) {
	e.t.Helper()
	e.tool(ctx, "make", append([]string{"-C", repoRoot, "--no-print-directory"}, args...)...)
}

// podStart creates a namespace with a one-replica Deployment of the pause image and returns its
// pod once Running, logging how long that took from the Deployment's creation.
func (e *env) podStart(ctx context.Context, prefix, what string) *corev1.Pod {
	e.t.Helper()
	ns := e.newNamespace(ctx, prefix)
	start := e.createDeployment(ctx, ns, "web", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: pause}}})
	pods := e.waitPods(ctx, ns, 1, "Running", isRunning)
	e.t.Logf("figure: pod start latency %s (Deployment created to pod Running): %s, node %s", what, time.Since(start).Round(time.Millisecond), pods[0].Spec.NodeName)
	return &pods[0]
}

// createSample creates the ClusterPodPlacementConfig of deploy/samples as a user would apply it,
// trusting the cluster registry's CA through a ConfigMap (caBundleConfigmapRef).
//
// The inspection retry budget is 1 (instead of 9, ~81 s) so that a pod whose image cannot be
// read (the private image without its pull secret) is released within seconds.
func (e *env) createSample(ctx context.Context, registryCA []byte) {
	e.t.Helper()
	_, err := e.cs.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "registry-ca"},
		Data:       map[string]string{"ca-bundle.crt": string(registryCA)},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "samples", "clusterpodplacementconfig.yaml"))
	if err != nil {
		e.t.Fatal(err)
	}
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		e.t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj.Object, "registry-ca", "spec", "caBundleConfigmapRef", "name"); err != nil {
		e.t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj.Object, int64(1), "spec", "imageInspection", "maxRetries"); err != nil {
		e.t.Fatal(err)
	}
	// The cases below run on the admission policy path, which the real apiserver applies.
	if err := unstructured.SetNestedField(obj.Object, string(v1beta1.AdmissionPolicyEnabled), "spec", "admissionPolicy"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dyn.Resource(cppcResource()).Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitSampleCondition waits until the ClusterPodPlacementConfig's condition typ is True (for
// Available: only then is the scheduling-gate webhook registered, so a pod created earlier may
// not be gated).
func (e *env) waitSampleCondition(ctx context.Context, typ string) {
	e.t.Helper()
	e.waitFor(ctx, "ClusterPodPlacementConfig "+typ, func() bool {
		obj, err := e.dyn.Resource(cppcResource()).Get(ctx, "cluster", metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == typ && m["status"] == "True" {
				return true
			}
		}
		return false
	})
}

// requiredArchitectures returns the kubernetes.io/arch values of the pod's required node affinity.
func requiredArchitectures(pod *corev1.Pod) []string {
	var out []string
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if r.Key == v1beta1.NodeArchLabel {
				out = append(out, r.Values...)
			}
		}
	}
	return out
}

func cppcResource() schema.GroupVersionResource {
	return v1beta1.GroupVersion.WithResource("clusterpodplacementconfigs")
}

func (e *env) waitAvailable(ctx context.Context, ns, name string) {
	e.t.Helper()
	e.waitFor(ctx, "Deployment "+ns+"/"+name+" Available", func() bool {
		d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				return d.Status.AvailableReplicas == ptr.Deref(d.Spec.Replicas, 1)
			}
		}
		return false
	})
}

// checkNothingLeft checks that undeploy removed the namespace, the CRD's objects and the webhooks.
func (e *env) checkNothingLeft(ctx context.Context) {
	e.t.Helper()
	e.waitFor(ctx, "namespace "+namespace+" gone", func() bool {
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	hooks, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil || len(hooks.Items) != 0 {
		e.t.Errorf("mutating webhooks left after undeploy: %v (error %v)", hooks, err)
	}
	vhooks, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil || len(vhooks.Items) != 0 {
		e.t.Errorf("validating webhooks left after undeploy: %v (error %v)", vhooks, err)
	}
	if _, err := e.dyn.Resource(cppcResource()).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		e.t.Errorf("listing ClusterPodPlacementConfigs after undeploy: error %v, want NotFound (CRD removed)", err)
	}
}

// waitFor polls cond every 200 ms until it holds or the test's context ends.
func (e *env) waitFor(ctx context.Context, what string, cond func() bool) {
	e.t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			e.t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
