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
	"testing"
	"time"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// TestPlacementDecidedAgainWhenThePodComesBack: a later webhook changes a pod the webhook placed
// at admission, and the apiserver calls the webhook again. What it admits is what it would have
// admitted had the later webhook run first: the placement of the pod as it now is, the user's and
// the later webhook's own fields kept.
func TestPlacementDecidedAgainWhenThePodComesBack(t *testing.T) {
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{
			Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
				Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 40}},
			}},
			ArchitectureTaints: []v1beta1.ArchitectureTaint{{Architecture: "arm64"}},
		},
	}
	const simple = `{"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`
	const withUserFields = `{"metadata":{"name":"p","namespace":"team","labels":{"app":"x"}},"spec":{` +
		`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
		`{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]},` +
		`"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":3,"preference":{"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}}]}},` +
		`"tolerations":[{"key":"gpu","operator":"Exists"}],"containers":[{"name":"a","image":"multi:1"}]}}`
	image := func(ref string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Containers[0].Image = ref }
	}
	tests := map[string]struct {
		pod     string
		rewrite []func(*corev1.Pod)
		// wantPlaced is whether the pod ends placed at admission (not gated, not left alone).
		wantPlaced bool
	}{
		"the image rewritten to another published one: placed for it": {
			pod: simple, rewrite: []func(*corev1.Pod){image("arm:1")}, wantPlaced: true,
		},
		"the image rewritten to one not published: gated for the controller": {
			pod: simple, rewrite: []func(*corev1.Pod){image("unknown:1")},
		},
		"the user's terms, preferences and tolerations stay, and so does the later webhook's toleration": {
			pod: withUserFields, wantPlaced: true,
			rewrite: []func(*corev1.Pod){image("s390x:1"), func(p *corev1.Pod) {
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "rewriter", Operator: corev1.TolerationOpExists})
			}},
		},
		"the later webhook's pod anti-affinity in the affinity archgate added stays": {
			pod: simple, wantPlaced: true,
			rewrite: []func(*corev1.Pod){image("arm:1"), func(p *corev1.Pod) {
				if p.Spec.Affinity == nil {
					p.Spec.Affinity = &corev1.Affinity{}
				}
				p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
				}}}
			}},
		},
		"the images unchanged, a label added: the same placement": {
			pod: withUserFields, wantPlaced: true,
			rewrite: []func(*corev1.Pod){func(p *corev1.Pod) { p.Labels["team"] = "ml" }},
		},
		"a copy of a pod the admission policy placed, with another image, where the policy is off": {
			pod: simple, wantPlaced: true,
			rewrite: []func(*corev1.Pod){image("arm:1"), func(p *corev1.Pod) {
				if record, ok := p.Annotations[v1beta1.AnnotationAdmissionPlacement]; ok { // the placed pod, not the one as created
					p.Annotations[v1beta1.AnnotationAdmissionPolicyPlacement] = record + ";multi:1"
					delete(p.Annotations, v1beta1.AnnotationAdmissionPlacement)
				}
			}},
		},
		"the later webhook pins the architecture with a nodeSelector: archgate's placement taken off": {
			pod: simple,
			rewrite: []func(*corev1.Pod){func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{v1beta1.NodeArchLabel: "amd64"}
			}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			configs := fake.NewClientBuilder().WithScheme(placementScheme(t)).WithObjects(cluster).Build()
			h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace, Known: publishedIndex(t), Configs: configs,
				Now: func() time.Time { return placeNow }})
			placed, d := admitRaw(t, h, []byte(tc.pod))
			if d.placed == nil {
				t.Fatalf("first call: not placed at admission (decision %+v)", d)
			}
			again, d := admitRaw(t, h, rewritten(t, placed, tc.rewrite))
			if !d.undone {
				t.Errorf("second call: the placement was not undone (decision %+v)", d)
			}
			want, wantDecision := admitRaw(t, h, rewritten(t, []byte(tc.pod), tc.rewrite))
			if (wantDecision.placed != nil) != tc.wantPlaced {
				t.Fatalf("the rewritten pod placed at admission = %t, want %t (decision %+v)", wantDecision.placed != nil, tc.wantPlaced, wantDecision)
			}
			if diff := cmp.Diff(decodePod(t, want), decodePod(t, again), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("placed, rewritten, placed again (-as if rewritten first +got):\n%s", diff)
			}
		})
	}
}

// TestPlacementRecordThatDoesNotFit: a pod whose admission-placement annotation does not fit it
// (a copy edited by hand, or a tenant's own annotation) is admitted as it is, with a warning: the
// webhook removes nothing the record names outside the node affinity and the tolerations.
func TestPlacementRecordThatDoesNotFit(t *testing.T) {
	for name, record := range map[string]string{
		"a toleration the pod does not have":    "/spec/tolerations/3",
		"a path outside archgate's fields":      "/spec/containers/0",
		"a node affinity the pod does not have": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
	} {
		t.Run(name, func(t *testing.T) {
			raw := `{"metadata":{"name":"p","namespace":"team","labels":{"multiarch.openshift.io/scheduling-gate":"admission"},` +
				`"annotations":{"multiarch.openshift.io/admission-placement":"` + record + `"}},"spec":{"containers":[{"name":"a","image":"multi:1"}]}}`
			h := NewSchedulingGate(nil, Options{OperatorNamespace: operatorNamespace})
			resp, d := h.handle(t.Context(), podRequest(t, raw))
			if !resp.Allowed || len(resp.Patches) > 0 || len(resp.Warnings) == 0 {
				t.Errorf("response: allowed %t, patches %v, warnings %v; want allowed unchanged, with a warning", resp.Allowed, resp.Patches, resp.Warnings)
			}
			if d.skip != SkipPlacementNotUndone || d.err == nil {
				t.Errorf("decision %+v, want skipped as %s with the error", d, SkipPlacementNotUndone)
			}
		})
	}
}

// assertUndoRestores checks that undoing the placement the patch made of the pod raw (after)
// gives the pod back as it came (before).
func assertUndoRestores(t *testing.T, raw string, patch []byte, before, after *corev1.Pod) {
	t.Helper()
	decoded, err := jsonpatchv5.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	placed, err := decoded.Apply([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	_, undone, err := undoPlacement(placed, after)
	if err != nil {
		t.Fatalf("undoing the placement: %v", err)
	}
	if diff := cmp.Diff(before, undone, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("placement undone (-as it came +undone):\n%s", diff)
	}
}

// admitRaw handles the pod raw and returns it as admitted, with the decision.
func admitRaw(t *testing.T, h *SchedulingGate, raw []byte) ([]byte, decision) {
	t.Helper()
	req := podRequest(t, string(raw))
	resp, d := h.handle(t.Context(), req)
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if err := resp.Complete(req); err != nil {
		t.Fatal(err)
	}
	if len(resp.Patch) == 0 {
		return raw, d
	}
	patch, err := jsonpatchv5.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("invalid JSON patch %s: %v", resp.Patch, err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", resp.Patch, err)
	}
	return out, d
}

// rewritten returns the pod raw as a later webhook changes it: decoded, changed, encoded again,
// as the apiserver hands it on.
func rewritten(t *testing.T, raw []byte, changes []func(*corev1.Pod)) []byte {
	t.Helper()
	p := decodePod(t, raw)
	for _, change := range changes {
		change(p)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decodePod(t *testing.T, raw []byte) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatalf("not a pod: %v", err)
	}
	return p
}
