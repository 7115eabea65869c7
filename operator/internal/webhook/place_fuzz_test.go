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

package webhook

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
)

// FuzzAdmissionPlacement feeds arbitrary pods to the handler with admission placement on and
// published images: nothing may panic, the handler never denies, and for a well-formed pod
// the patch applies and yields either a gated pod (gate and label) or a placed one (no gate of
// archgate's, its placement label, every image published, the user's required architecture
// terms kept).
func FuzzAdmissionPlacement(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`))
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"},{"name":"b","image":"arm:1"}],` +
		`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}}}`))
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"team"},"spec":{"initContainers":[{"name":"i","image":"bundle:1"}],"containers":[{"name":"a","image":"s390x:1"}]}}`))
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"docker.io/library/multi:1@sha256:` +
		`0000000000000000000000000000000000000000000000000000000000000000"}]}}`))
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"old:1"}],"schedulingGates":[{"name":"x"}]}}`))
	ix := publishedIndex(f)
	cluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 10}}}}}}
	scheme := placementScheme(f)
	configs := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cluster).Build()
	h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace, Known: ix, Configs: configs,
		Now: func() time.Time { return placeNow }})
	request := func(raw []byte) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "uid-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "team",
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		}}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any bytes: never a panic, never a denial.
		if resp := h.Handle(t.Context(), request(data)); !resp.Allowed {
			t.Fatalf("denied: %+v", resp.Result)
		}
		// What the apiserver sends is a serialized Pod (unknown fields pruned, fields without
		// omitempty present): its patch must apply and leave the pod gated or placed.
		var before corev1.Pod
		if json.Unmarshal(data, &before) != nil {
			return
		}
		raw, err := json.Marshal(&before)
		if err != nil {
			t.Fatal(err)
		}
		req := request(raw)
		resp := h.Handle(t.Context(), req)
		if !resp.Allowed {
			t.Fatalf("denied: %+v", resp.Result)
		}
		if len(resp.Patches) == 0 {
			return
		}
		pod := patchedPod(t, resp, req, raw)
		if pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueGated {
			if !v1beta1.HasSchedulingGate(&pod.Spec) {
				t.Errorf("labelled gated without the gate: %s", resp.Patch)
			}
			return
		}
		// Placed at admission.
		if v1beta1.HasSchedulingGate(&pod.Spec) || pod.Labels[v1beta1.LabelPlacement] == "" {
			t.Fatalf("neither gated nor placed: labels %v, gates %v", pod.Labels, pod.Spec.SchedulingGates)
		}
		for _, img := range placement.PodImages(&pod.Spec) {
			if _, ok := ix.Lookup(img, placeNow); !ok {
				t.Errorf("placed with image %q that is not published", img)
			}
		}
		keptUserTerms(t, before.Spec.Affinity, pod.Spec.Affinity)
	})
}

// keptUserTerms checks that every requirement of the user's required node affinity is still
// in the placed pod's term of the same index: archgate adds to a user's constraints, never
// removes one.
func keptUserTerms(t *testing.T, before, after *corev1.Affinity) {
	t.Helper()
	if before == nil || before.NodeAffinity == nil || before.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	if after == nil || after.NodeAffinity == nil || after.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Fatalf("the user's required node affinity was removed")
	}
	was := before.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	now := after.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(was) == 0 {
		// A required node affinity without terms constrains nothing (the apiserver's validation
		// refuses it as it stands): placement gives it the architecture term.
		return
	}
	if len(now) != len(was) {
		t.Fatalf("required terms %d, were %d", len(now), len(was))
	}
	for i, term := range was {
		for _, req := range term.MatchExpressions {
			if !containsRequirement(now[i].MatchExpressions, req) {
				t.Errorf("term %d lost the user's requirement %+v", i, req)
			}
		}
	}
}

func containsRequirement(reqs []corev1.NodeSelectorRequirement, want corev1.NodeSelectorRequirement) bool {
	for _, r := range reqs {
		if r.Key == want.Key && r.Operator == want.Operator && slices.Equal(r.Values, want.Values) {
			return true
		}
	}
	return false
}
