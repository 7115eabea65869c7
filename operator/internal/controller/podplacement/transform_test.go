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
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
)

// fullPod is a pod with the fields a real one carries besides those placement reads.
func fullPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "42",
			Labels:          map[string]string{"app": "a", v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated},
			Annotations:     map[string]string{"team": "x"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "r.example/app:1", Command: []string{"/app"},
				Env:       []corev1.EnvVar{{Name: "K", Value: "V"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			InitContainers:   []corev1.Container{{Name: "i", Image: "r.example/init:1", Args: []string{"x"}}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			NodeSelector:     map[string]string{"disk": "ssd"},
			SchedulingGates:  []corev1.PodSchedulingGate{{Name: "other"}, {Name: v1beta1.SchedulingGateName}},
			Volumes:          []corev1.Volume{{Name: "v"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled}}},
	}
}

func TestPlacementViewKeepsWhatPlacementReads(t *testing.T) {
	pod := fullPod()
	view := placementView(pod)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "42",
			Labels: pod.Labels, Annotations: pod.Annotations},
		Spec: corev1.PodSpec{
			Containers:       []corev1.Container{{Name: "c", Image: "r.example/app:1"}},
			InitContainers:   []corev1.Container{{Name: "i", Image: "r.example/init:1"}},
			ImagePullSecrets: pod.Spec.ImagePullSecrets,
			NodeSelector:     pod.Spec.NodeSelector,
			SchedulingGates:  pod.Spec.SchedulingGates,
		},
	}
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("view (-want +got):\n%s", diff)
	}
	if got := placement.PodImages(&view.Spec); !slices.Equal(got, placement.PodImages(&pod.Spec)) {
		t.Errorf("images of the view %v differ from the pod's %v", got, placement.PodImages(&pod.Spec))
	}
}

// TestPlacementViewPatch checks that the one write computed from the view changes only what the
// controller means to change: no container, volume or status field is in the patch, so the
// fields the view dropped stay as they are on the server.
func TestPlacementViewPatch(t *testing.T) {
	view := placementView(fullPod())
	updated := view.DeepCopy()
	placement.MergeRequiredArchitectures(&updated.Spec, sets.New("arm64"))
	ungate(updated, placement.OutcomeArchSet, map[string]string{v1beta1.AnnotationArchitectures: "arm64"})
	data, err := client.MergeFromWithOptions(view, client.MergeFromWithOptimisticLock{}).Data(updated)
	if err != nil {
		t.Fatal(err)
	}
	var patch map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &patch); err != nil {
		t.Fatalf("patch %s: %v", data, err)
	}
	var keys []string
	for top, fields := range patch {
		for k := range fields {
			keys = append(keys, top+"."+k)
		}
	}
	slices.Sort(keys)
	want := []string{"metadata.annotations", "metadata.labels", "metadata.resourceVersion", "spec.affinity", "spec.schedulingGates"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("patch keys (-want +got):\n%s\npatch: %s", diff, data)
	}
}

// TestTransformPodKeepsWhatTheCacheServes: the cache keeps identity, timestamps and
// archgate's labels; the tenant's labels, annotations, owners and managed fields are dropped.
func TestTransformPodKeepsWhatTheCacheServes(t *testing.T) {
	m := &metav1.PartialObjectMetadata{ObjectMeta: *fullPod().ObjectMeta.DeepCopy()}
	m.CreationTimestamp = metav1.Unix(1_000, 0)
	m.Annotations["big"] = strings.Repeat("x", 256<<10)
	got, err := transformPod(m)
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "42", CreationTimestamp: metav1.Unix(1_000, 0),
		Labels: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}}
	if diff := cmp.Diff(want, got.(*metav1.PartialObjectMetadata).ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

func TestLabelledForClusterStage(t *testing.T) {
	tests := map[string]struct {
		labels map[string]string
		want   bool
	}{
		"gated":                           {map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}, true},
		"no labels":                       {nil, false},
		"placed at admission":             {map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueAdmission}, false},
		"gate removed":                    {map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved}, false},
		"local gate still held":           {map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated, v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated}, false},
		"local gate released":             {map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated, v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueReleased}, true},
		"local gate only, no cluster one": {map[string]string{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueGated}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := labelledForClusterStage(tc.labels); got != tc.want {
				t.Errorf("labelledForClusterStage(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}
