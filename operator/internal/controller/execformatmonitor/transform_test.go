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

package execformatmonitor

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/execformat"
)

// realisticPod is a Deployment's running pod as the apiserver returns it (managed fields
// aside, which the caches strip): labels, owner, two containers with env, probes, resources
// and mounts, the projected token volume, default tolerations, a full status.
func realisticPod(i int) *corev1.Pod {
	name := fmt.Sprintf("web-7d9f8c6b5-%05d", i)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10}
	container := func(n string) corev1.Container {
		return corev1.Container{
			Name: n, Image: "registry.example/team/" + n + ":v1.2.3",
			Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "PORT", Value: "8080"}, {Name: "REGION", Value: "eu-west-1"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			ReadinessProbe: probe, LivenessProbe: probe,
			VolumeMounts:           []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			ImagePullPolicy: corev1.PullIfNotPresent,
		}
	}
	status := func(n string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: n, Ready: true, Image: "registry.example/team/" + n + ":v1.2.3",
			ImageID:     "registry.example/team/" + n + "@sha256:4f1f8a5ad5c5a9f4c9c4b0e0a1f3d8b2c7e6d5f4a3b2c1d0e9f8a7b6c5d4e3f2",
			ContainerID: fmt.Sprintf("containerd://%064x", i),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	}
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID(fmt.Sprintf("0b5c1d2e-3f4a-4b6c-8d9e-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), GenerateName: "web-7d9f8c6b5-", CreationTimestamp: metav1.Now(),
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5", "team": "a", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved},
			Annotations:     map[string]string{v1beta1.AnnotationArchitectures: "amd64,arm64", "kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			}}}}},
			NodeName: fmt.Sprintf("node-%04d", i%1000), ServiceAccountName: "default", SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.3.17", PodIP: "10.244.3.17", QOSClass: corev1.PodQOSBurstable,
			Conditions:        []corev1.PodCondition{cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
			ContainerStatuses: []corev1.ContainerStatus{status("app"), status("sidecar")}},
	}
}

// heapOf returns the live heap bytes that keep(n) retains.
func heapOf(t *testing.T, n int, keep func(n int) any) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := keep(n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return after.HeapAlloc - before.HeapAlloc
}

// fill decodes n pods from JSON, as an informer does (every string its own allocation), and
// stores each one, or its monitor view, in a client-go store like the informer's.
func fill(t *testing.T, n int, view bool) any {
	t.Helper()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for i := range n {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(podJSON(t, i), pod); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 { // 1% of the pods crash-loop on an exec format error
			pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			pod.Status.ContainerStatuses[0].LastTerminationState = terminatedWith("exec /app: exec format error")
		}
		var obj any = pod
		if view {
			var err error
			if obj, err = transformPod(pod); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// podJSON is realisticPod(i) as JSON; the pods differ by name, UID, node and versions only.
func podJSON(t *testing.T, i int) []byte {
	t.Helper()
	raw, err := json.Marshal(realisticPod(i))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func terminatedWith(msg string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, Message: msg}}
}

// TestMonitorViewMemory measures what the monitor's cache holds at 10,000 pods against the
// same pods cached whole (managed fields aside). The bound is loose on purpose: the point is
// the order of magnitude the view saves, and the figure is in the log.
//
// Under the race detector (make test-unit) it measures 1,000 pods: 10,000 take minutes there.
func TestMonitorViewMemory(t *testing.T) {
	n := 10_000
	if raceEnabled {
		n = 1_000
	}
	full := heapOf(t, n, func(n int) any { return fill(t, n, false) })
	view := heapOf(t, n, func(n int) any { return fill(t, n, true) })
	perPod := func(b uint64) uint64 { return b / uint64(n) }
	t.Logf("%d pods cached: whole %.1f MiB (%d B/pod), monitor view %.1f MiB (%d B/pod), ratio %.1f",
		n, float64(full)/(1<<20), perPod(full), float64(view)/(1<<20), perPod(view), float64(full)/float64(view))
	if view*5 > full {
		t.Errorf("the monitor view keeps %d B/pod, more than a fifth of the whole pod's %d B/pod", perPod(view), perPod(full))
	}
}

func TestMonitorView(t *testing.T) {
	pod := realisticPod(1)
	pod.Labels[v1beta1.LabelExecFormatError] = v1beta1.LabelValueTrue
	pod.Status.ContainerStatuses[1].LastTerminationState = terminatedWith("exec /sidecar: exec format error")
	want := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Labels:          map[string]string{v1beta1.LabelExecFormatError: v1beta1.LabelValueTrue},
			OwnerReferences: []metav1.OwnerReference{*metav1.GetControllerOf(pod)}},
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "sidecar",
			State: pod.Status.ContainerStatuses[1].State, LastTerminationState: terminatedWith("exec /sidecar: exec format error")}}},
	}
	got, err := transformPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("monitor view (-want +got):\n%s", diff)
	}
	if needsReport(want) {
		t.Error("a labelled pod needs a report again")
	}
	delete(want.Labels, v1beta1.LabelExecFormatError)
	if !needsReport(want) {
		t.Error("an unlabelled failing pod needs no report")
	}
	if healthy := monitorView(realisticPod(2)); needsReport(healthy) || healthy.Status.ContainerStatuses != nil || healthy.OwnerReferences != nil {
		t.Errorf("a healthy pod keeps statuses or its owner, or needs a report: %+v", healthy)
	}
}

func TestRecreatingOwner(t *testing.T) {
	owner := func(apiVersion, kind string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "u", Controller: &controller}}
	}
	for name, tc := range map[string]struct {
		owners []metav1.OwnerReference
		want   bool
	}{
		"ReplicaSet":                     {owners: owner("apps/v1", "ReplicaSet", true), want: true},
		"StatefulSet":                    {owners: owner("apps/v1", "StatefulSet", true), want: true},
		"ReplicationController":          {owners: owner("v1", "ReplicationController", true), want: true},
		"DaemonSet: same node again":     {owners: owner("apps/v1", "DaemonSet", true)},
		"Job: a deletion is a failure":   {owners: owner("batch/v1", "Job", true)},
		"an owner that is no controller": {owners: owner("apps/v1", "ReplicaSet", false)},
		"a bare pod":                     {},
		"a ReplicaSet of another group":  {owners: owner("example.com/v1", "ReplicaSet", true)},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.owners}}
			if _, got := RecreatingOwner(pod); got != tc.want {
				t.Errorf("RecreatingOwner = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestDeletionsOncePerOwnerPerInterval(t *testing.T) {
	d := newDeletions(time.Hour)
	if !d.claim("a") || d.claim("a") {
		t.Fatal("want one claim per owner within the interval")
	}
	if !d.claim("b") {
		t.Error("another owner is refused")
	}
	d.unclaim("a")
	if !d.claim("a") {
		t.Error("a failed deletion still counts against its owner")
	}
	short := newDeletions(time.Millisecond)
	short.claim("a")
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return short.claim("a"), nil
	}); err != nil {
		t.Errorf("the claim never expired: %v", err)
	}
}

func TestEventNote(t *testing.T) {
	long := strings.Repeat("é", 600) // 1,200 bytes of two-byte runes
	tests := map[string]struct {
		finding  execformat.Finding
		want     string
		wantSize int
	}{
		"one line, the node's architecture": {
			finding: execformat.Finding{Container: "app", Reason: "Error", Message: "exec /app: exec format error\n", ExitCode: 1},
			want:    `Container "app" failed with an exec format error on node n1 (arm64): its image has no binary for this architecture. Error: exec /app: exec format error`,
		},
		"an init container": {
			finding: execformat.Finding{Container: "setup", Init: true, Reason: "StartError", Message: "exec format error"},
			want:    `Init container "setup" failed with an exec format error on node n1 (arm64): its image has no binary for this architecture. StartError: exec format error`,
		},
		"a long message is cut within the apiserver's limit, on a rune": {
			finding:  execformat.Finding{Container: "app", Reason: "Error", Message: "exec format error " + long},
			wantSize: maxNoteLen,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := EventNote(tc.finding, "n1", "arm64")
			if tc.want != "" && got != tc.want {
				t.Errorf("note\n got %q\nwant %q", got, tc.want)
			}
			if len(got) > maxNoteLen || !utf8.ValidString(got) || (tc.wantSize > 0 && len(got) < tc.wantSize-4) {
				t.Errorf("note of %d bytes (valid UTF-8 %t), want at most %d", len(got), utf8.ValidString(got), maxNoteLen)
			}
		})
	}
}
