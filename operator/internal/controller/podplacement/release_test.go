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
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// releasePod is a gated pod with a preferred zone affinity, which a release must leave alone.
func releasePod(name string) *objects.PodBuilder {
	return gatedPod(name, "registry.example/app:1").WithAffinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
		}},
	}})
}

func applyJSONPatch(t *testing.T, p *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := jsonpatchv5.DecodePatch(patch)
	if err != nil {
		t.Fatalf("invalid patch %s: %v", patch, err)
	}
	out, err := decoded.Apply(doc)
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	got := &corev1.Pod{}
	if err := json.Unmarshal(out, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReleasePatch(t *testing.T) {
	released := map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementReleased}
	gatedLabel := []string{v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated}
	tests := map[string]struct {
		pod        *corev1.Pod
		wantOK     bool
		wantGates  []corev1.PodSchedulingGate
		wantLabels map[string]string
	}{
		"gated": {
			pod: releasePod("a").WithLabels(gatedLabel...).Build(), wantOK: true, wantLabels: released,
		},
		"other gates stay, in order": {
			pod:    releasePod("a").WithLabels(gatedLabel...).WithSchedulingGates("first", v1beta1.SchedulingGateName, "last").Build(),
			wantOK: true, wantGates: []corev1.PodSchedulingGate{{Name: "first"}, {Name: "last"}}, wantLabels: released,
		},
		"user labels stay": {
			pod: releasePod("a").Build(), wantOK: true,
			wantLabels: map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementReleased},
		},
		"gate without labels": {
			pod: releasePod("a").WithLabels().Build(), wantOK: true, wantLabels: released,
		},
		"label left behind without the gate": {
			pod: releasePod("a").WithLabels(gatedLabel...).WithSchedulingGates().Build(), wantOK: true, wantLabels: released,
		},
		"not gated": {
			pod: releasePod("a").WithLabels().WithSchedulingGates("someone-else").Build(), wantOK: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			patch, ok := ReleasePatch(tc.pod)
			if ok != tc.wantOK {
				t.Fatalf("ok = %t, want %t", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			got := applyJSONPatch(t, tc.pod, patch)
			if diff := cmp.Diff(tc.wantGates, got.Spec.SchedulingGates, cmpEmptyGates); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLabels, got.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pod.Spec.Affinity, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity changed (-before +after):\n%s", diff)
			}
		})
	}
}

var cmpEmptyGates = cmp.Transformer("emptyGates", func(g []corev1.PodSchedulingGate) []corev1.PodSchedulingGate {
	if len(g) == 0 {
		return nil
	}
	return g
})

func TestLocalReleasePatch(t *testing.T) {
	pod := releasePod("a").WithLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated, v1beta1.LabelLocalSchedulingGate, v1beta1.LabelValueGated).
		WithSchedulingGates(v1beta1.LocalSchedulingGateName, v1beta1.SchedulingGateName).Build()
	patch, ok := LocalReleasePatch(pod)
	if !ok {
		t.Fatal("a locally gated pod: nothing to release")
	}
	got := applyJSONPatch(t, pod, patch)
	if diff := cmp.Diff([]corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}}, got.Spec.SchedulingGates); diff != "" {
		t.Errorf("gates (-want +got): the cluster-wide gate must stay\n%s", diff)
	}
	want := map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated, v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueReleased}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if _, ok := LocalReleasePatch(releasePod("b").Build()); ok {
		t.Error("a pod without the local gate: a release patch was returned")
	}
}

func TestReleasePatchFailsWhenTheControllerWonTheRace(t *testing.T) {
	before := releasePod("a").Build()
	patch, _ := ReleasePatch(before)
	// The pod placement controller removed the gate and relabelled the pod meanwhile.
	after := releasePod("a").WithSchedulingGates().
		WithLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueRemoved, v1beta1.LabelPlacement, v1beta1.PlacementArchSet).Build()
	doc, _ := json.Marshal(after)
	decoded, _ := jsonpatchv5.DecodePatch(patch)
	if _, err := decoded.Apply(doc); err == nil {
		t.Fatal("the release patch applied over the controller's result; its test operations must fail")
	}
}

func TestRelease(t *testing.T) {
	var objs []client.Object
	for i := range 120 {
		objs = append(objs, releasePod(fmt.Sprintf("gated-%03d", i)).InNamespace("team-a").
			WithLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated, "app", fmt.Sprintf("app-%d", i%2)).Build())
	}
	objs = append(objs,
		releasePod("gated").InNamespace("team-b").Build(),
		releasePod("done").InNamespace("team-a").WithSchedulingGates().WithLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueRemoved).Build(),
	)
	tests := map[string]struct {
		opts         ReleaseOptions
		wantSelected int
		wantReleased int
		wantWould    int
		wantLeft     int // gated pods left afterwards, cluster-wide
	}{
		"dry run everywhere":      {opts: ReleaseOptions{DryRun: true, PageSize: 50}, wantSelected: 121, wantWould: 121, wantLeft: 121},
		"one namespace":           {opts: ReleaseOptions{Namespace: "team-b"}, wantSelected: 1, wantReleased: 1, wantLeft: 120},
		"selector":                {opts: ReleaseOptions{Selector: labels.SelectorFromSet(labels.Set{"app": "app-1"}), PageSize: 7}, wantSelected: 60, wantReleased: 60, wantLeft: 61},
		"everything, small pages": {opts: ReleaseOptions{PageSize: 13, Workers: 3}, wantSelected: 121, wantReleased: 121, wantLeft: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(objs...).Build()
			var mu sync.Mutex
			reported := 0
			tc.opts.Report = func(ReleaseOutcome) { mu.Lock(); reported++; mu.Unlock() }
			sum, err := Release(context.Background(), c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Selected != tc.wantSelected || sum.Released != tc.wantReleased || sum.WouldRelease != tc.wantWould || sum.Failed != 0 {
				t.Errorf("summary %+v, want selected %d released %d would-release %d", sum, tc.wantSelected, tc.wantReleased, tc.wantWould)
			}
			if reported != tc.wantSelected {
				t.Errorf("reported %d outcomes, want %d", reported, tc.wantSelected)
			}
			left := &corev1.PodList{}
			if err := c.List(context.Background(), left, client.MatchingLabels{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}); err != nil {
				t.Fatal(err)
			}
			if len(left.Items) != tc.wantLeft {
				t.Errorf("%d gated pods left, want %d", len(left.Items), tc.wantLeft)
			}
		})
	}
}
