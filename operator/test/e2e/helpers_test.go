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
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/realnode"
)

// Images of the cluster's registry (hack/cluster/registry-catalog.yaml) that only kwok nodes
// "run", or none.
const (
	arm64Only   = realnode.Registry + "/e2e/arm64-only:1"
	riscv64Only = realnode.Registry + "/e2e/riscv64-only:1"
	privateARM  = realnode.Registry + "/private/arm64-only:1"
	// armPower is pulled by the leader failover case only: an image the webhook does not know
	// yet (it places pods of known images at admission), so its pods wait for the controller.
	armPower = realnode.Registry + "/e2e/arm64-ppc64le:1"
)

// checkFakeNodes checks that a Ready kwok node of each fake architecture stands beside the
// real node, labelled with its architecture.
func (e *env) checkFakeNodes(ctx context.Context) {
	e.t.Helper()
	for _, arch := range realnode.FakeArchitectures() {
		name := realnode.FakeNodeName(arch)
		e.waitFor(ctx, "node "+name+" Ready", func() bool {
			n, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && nodeReady(n) && n.Labels[v1beta1.NodeArchLabel] == arch
		})
	}
}

func nodeReady(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// newNamespace creates a namespace named <prefix>-<random> (the test can run again on the same
// cluster) and waits for its default ServiceAccount (pods cannot be created before it exists).
func (e *env) newNamespace(ctx context.Context, prefix string) string {
	e.t.Helper()
	created, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	ns := created.Name
	e.t.Cleanup(func() { // not waited for: its pods go away in the background
		if err := e.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			e.t.Logf("deleting namespace %s: %v", ns, err)
		}
	})
	e.waitFor(ctx, "default ServiceAccount in "+ns, func() bool {
		_, err := e.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	return ns
}

// createDeployment creates a Deployment of spec and returns when it was created.
func (e *env) createDeployment(ctx context.Context, ns, name string, replicas int32, spec corev1.PodSpec) time.Time {
	e.t.Helper()
	labels := map[string]string{"app": name}
	start := time.Now()
	_, err := e.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return start
}

// waitPods waits until at least n pods of the namespace satisfy cond and returns those that do.
func (e *env) waitPods(ctx context.Context, ns string, n int, what string, cond func(*corev1.Pod) bool) []corev1.Pod {
	e.t.Helper()
	var out []corev1.Pod
	e.waitFor(ctx, what+" pods in "+ns, func() bool {
		pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		out = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !cond(&p) })
		return len(out) >= n
	})
	return out
}

func isRunning(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// ungated reports whether the pod no longer carries archgate's scheduling gate.
func ungated(p *corev1.Pod) bool {
	return !slices.ContainsFunc(p.Spec.SchedulingGates, v1beta1.IsSchedulingGate)
}

// unschedulable reports whether the scheduler tried and found no node for the pod.
func unschedulable(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
	})
}

// onFakeNodes is a pod spec of images that tolerates the kwok nodes' taint.
func onFakeNodes(images ...string) corev1.PodSpec {
	spec := corev1.PodSpec{Tolerations: []corev1.Toleration{{
		Key: realnode.FakeNodeTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	}}}
	for i, img := range images {
		spec.Containers = append(spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: img})
	}
	return spec
}

// checkPlaced checks that the pod was gated (by the webhook), released by the controller with
// the placement label arch-set, and requires exactly archs.
func (e *env) checkPlaced(pod *corev1.Pod, archs ...string) {
	e.t.Helper()
	if got := pod.Labels[v1beta1.LabelSchedulingGate]; got != v1beta1.LabelValueRemoved {
		e.t.Errorf("pod %s/%s label %s = %q, want %q (gated by the webhook through its Service, then released)",
			pod.Namespace, pod.Name, v1beta1.LabelSchedulingGate, got, v1beta1.LabelValueRemoved)
	}
	if got := pod.Labels[v1beta1.LabelPlacement]; got != v1beta1.PlacementArchSet {
		e.t.Errorf("pod %s/%s label %s = %q, want %q (images inspected in the cluster's registry)",
			pod.Namespace, pod.Name, v1beta1.LabelPlacement, got, v1beta1.PlacementArchSet)
	}
	if got := requiredArchitectures(pod); !slices.Equal(got, archs) {
		e.t.Errorf("pod %s/%s requires kubernetes.io/arch in %v, want %v", pod.Namespace, pod.Name, got, archs)
	}
}
