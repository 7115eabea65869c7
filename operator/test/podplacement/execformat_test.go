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

package podplacement

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
)

// TestExecFormatErrorMonitor writes, as the kubelet would, the status of containers that
// crash-loop on an exec format error on an arm64 node, and of one that crashes for another
// reason, and checks that the monitor labels the first, records one Warning Event on it and
// counts it by namespace and node architecture, and leaves the other alone.
func TestExecFormatErrorMonitor(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	node := armNode(t, "exec-format-"+ns)

	other := boundPod(t, ns, "other-crash", node.Name)
	setStatus(t, other, crashLooping("panic: runtime error: index out of range", 2))
	misplaced := boundPod(t, ns, "misplaced", node.Name)
	setStatus(t, misplaced, crashLooping("exec /app: exec format error", 1))

	eventually(t, "the exec-format-error label", func(ctx context.Context) (bool, error) {
		got := &corev1.Pod{}
		err := s.client.Get(ctx, client.ObjectKeyFromObject(misplaced), got)
		return err == nil && got.Labels[v1beta1.LabelExecFormatError] == v1beta1.LabelValueTrue, err
	})
	e := waitEvent(t, misplaced, "ExecFormatError")
	if e.Type != corev1.EventTypeWarning || e.Note == "" {
		t.Errorf("event type %s note %q, want a Warning with a note", e.Type, e.Note)
	}
	t.Logf("event: %s", e.Note)
	labels := map[string]string{components.LabelExecFormatNamespace: ns, components.LabelExecFormatArchitecture: "arm64"}
	if got := metric(t, s.controllerMetrics, components.MetricExecFormatErrorPods, labels); got != 1 {
		t.Errorf("%s%v = %v, want 1", components.MetricExecFormatErrorPods, labels, got)
	}

	// The kubelet keeps updating the status as the container restarts: no second report.
	// A second misplaced pod, detected after that update, bounds the wait.
	setStatus(t, misplaced, crashLooping("exec /app: exec format error (restart 2)", 1))
	second := boundPod(t, ns, "second", node.Name)
	setStatus(t, second, crashLooping("exec container process `/app`: Exec format error", 255))
	waitEvent(t, second, "ExecFormatError")
	if n := countEvents(t, misplaced, "ExecFormatError"); n != 1 {
		t.Errorf("%d ExecFormatError Events on %s, want 1", n, misplaced.Name)
	}
	if got := metric(t, s.controllerMetrics, components.MetricExecFormatErrorPods, labels); got != 2 {
		t.Errorf("%s%v = %v, want 2", components.MetricExecFormatErrorPods, labels, got)
	}
	got := &corev1.Pod{}
	if err := s.client.Get(s.ctx, client.ObjectKeyFromObject(other), got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Labels[v1beta1.LabelExecFormatError]; ok || countEvents(t, other, "ExecFormatError") != 0 {
		t.Errorf("pod %s crashing for another reason was reported (labels %v)", other.Name, got.Labels)
	}
}

// TestExecFormatErrorMonitorDeletesForOwner: with the action DeletePod, of two misplaced pods of
// one ReplicaSet one is deleted (its owner recreates it) and the other only reported, the
// interval not being over; a DaemonSet's pod, which would come back on the same node, is only
// reported; the ReplicaSet gets a Warning Event.
func TestExecFormatErrorMonitorDeletesForOwner(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	node := armNode(t, "exec-format-delete-"+ns)
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c0", Image: "registry.example/app:1"}}}},
	}}
	if err := s.client.Create(s.ctx, rs); err != nil {
		t.Fatal(err)
	}
	owned := func(name, apiVersion, kind, ownerName string, uid types.UID) *corev1.Pod {
		p := pod(ns, name, "registry.example/app:1")
		p.Spec.NodeName = node.Name
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: ownerName, UID: uid, Controller: ptr.To(true)}}
		p = create(t, p, false)
		setStatus(t, p, crashLooping("exec /app: exec format error", 1))
		return p
	}
	web := []*corev1.Pod{owned("web-1", "apps/v1", "ReplicaSet", rs.Name, rs.UID), owned("web-2", "apps/v1", "ReplicaSet", rs.Name, rs.UID)}
	agent := owned("agent", "apps/v1", "DaemonSet", "agent", "ds-uid")

	var remaining []string
	eventually(t, "one of the ReplicaSet's pods deleted, the other and the DaemonSet's reported", func(ctx context.Context) (bool, error) {
		remaining = nil
		for _, p := range append(web, agent) {
			got := &corev1.Pod{}
			err := s.client.Get(ctx, client.ObjectKeyFromObject(p), got)
			switch {
			case apierrors.IsNotFound(err) || err == nil && got.DeletionTimestamp != nil:
				continue // deleted (a bound pod waits for its kubelet, which envtest lacks)
			case err != nil:
				return false, err
			case got.Labels[v1beta1.LabelExecFormatError] != v1beta1.LabelValueTrue:
				return false, nil
			}
			remaining = append(remaining, p.Name)
		}
		return len(remaining) == 2, nil
	})
	if remaining[1] != agent.Name {
		t.Errorf("remaining pods %v, want one of the ReplicaSet's and %s", remaining, agent.Name)
	}
	eventually(t, "the ExecFormatErrorPodDeleted Event on the ReplicaSet", func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := s.client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == "ExecFormatErrorPodDeleted" && e.Regarding.Kind == "ReplicaSet" && e.Regarding.Name == rs.Name && e.Type == corev1.EventTypeWarning {
				t.Logf("event: %s", e.Note)
				return true, nil
			}
		}
		return false, nil
	})
	for result, want := range map[string]float64{"deleted": 1, "skipped": 1} {
		if got := metric(t, s.controllerMetrics, components.MetricExecFormatErrorPodDeletions, map[string]string{"namespace": ns, "result": result}); got != want {
			t.Errorf("%s{result=%s} = %v, want %v", components.MetricExecFormatErrorPodDeletions, result, got, want)
		}
	}
}

// armNode creates an arm64 node for the test, deleted after it.
func armNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1beta1.NodeArchLabel: "arm64"}}}
	if err := s.client.Create(s.ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.client.Delete(context.Background(), node) })
	return node
}

// boundPod creates a pod already bound to the node (the webhook lets it through ungated).
func boundPod(t *testing.T, namespace, name, node string) *corev1.Pod {
	t.Helper()
	p := pod(namespace, name, "registry.example/app:1")
	p.Spec.NodeName = node
	return create(t, p, false)
}

// crashLooping is the status the kubelet writes for a container in CrashLoopBackOff whose
// last run ended with msg in its termination message (FallbackToLogsOnError).
func crashLooping(msg string, exitCode int32) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "c0", Image: "registry.example/app:1", RestartCount: 1,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off 10s restarting failed container=c0"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "Error", ExitCode: exitCode, Message: msg}},
	}}}
}

func setStatus(t *testing.T, p *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	current := &corev1.Pod{}
	if err := s.client.Get(s.ctx, client.ObjectKeyFromObject(p), current); err != nil {
		t.Fatal(err)
	}
	current.Status = status
	if err := s.client.Status().Update(s.ctx, current); err != nil {
		t.Fatalf("writing the status of %s: %v", p.Name, err)
	}
}

func countEvents(t *testing.T, p *corev1.Pod, reason string) int {
	t.Helper()
	n := 0
	for _, e := range podEvents(t, p) {
		if e.Reason == reason {
			n++
		}
	}
	return n
}
