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

package ungate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// podOpt modifies a test pod.
type podOpt func(*corev1.Pod)

func withGates(names ...string) podOpt {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
		}
	}
}

func withLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func gated() podOpt {
	return func(p *corev1.Pod) {
		withGates(v1beta1.SchedulingGateName)(p)
		withLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated)(p)
	}
}

func pod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			}}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func applyPatch(t *testing.T, p *corev1.Pod, patch []byte) *corev1.Pod {
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
	tests := map[string]struct {
		pod        *corev1.Pod
		wantOK     bool
		wantGates  []corev1.PodSchedulingGate
		wantLabels map[string]string
	}{
		"gated": {
			pod: pod("ns", "a", gated()), wantOK: true, wantLabels: released,
		},
		"other gates stay, in order": {
			pod:    pod("ns", "a", withGates("first"), gated(), withGates("last")),
			wantOK: true, wantGates: []corev1.PodSchedulingGate{{Name: "first"}, {Name: "last"}}, wantLabels: released,
		},
		"user labels stay": {
			pod: pod("ns", "a", withLabels("app", "web"), gated()), wantOK: true,
			wantLabels: map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: v1beta1.PlacementReleased},
		},
		"gate without labels": {
			pod: pod("ns", "a", withGates(v1beta1.SchedulingGateName)), wantOK: true, wantLabels: released,
		},
		"label left behind without the gate": {
			pod: pod("ns", "a", withLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated)), wantOK: true, wantLabels: released,
		},
		"not gated": {
			pod: pod("ns", "a", withGates("someone-else")), wantOK: false,
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
			got := applyPatch(t, tc.pod, patch)
			if diff := cmp.Diff(tc.wantGates, got.Spec.SchedulingGates, cmpEmpty); diff != "" {
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

var cmpEmpty = cmp.Transformer("emptyGates", func(g []corev1.PodSchedulingGate) []corev1.PodSchedulingGate {
	if len(g) == 0 {
		return nil
	}
	return g
})

func TestReleasePatchFailsWhenTheControllerWonTheRace(t *testing.T) {
	before := pod("ns", "a", gated())
	patch, _ := ReleasePatch(before)
	// The pod placement controller removed the gate and relabelled the pod meanwhile.
	after := pod("ns", "a", withLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueRemoved, v1beta1.LabelPlacement, v1beta1.PlacementArchSet))
	doc, _ := json.Marshal(after)
	decoded, _ := jsonpatchv5.DecodePatch(patch)
	if _, err := decoded.Apply(doc); err == nil {
		t.Fatal("the release patch applied over the controller's result; its test operations must fail")
	}
}

func TestRelease(t *testing.T) {
	var objs []client.Object
	for i := range 120 {
		objs = append(objs, pod("team-a", fmt.Sprintf("gated-%03d", i), gated(), withLabels("app", fmt.Sprintf("app-%d", i%2))))
	}
	objs = append(objs,
		pod("team-b", "gated", gated()),
		pod("team-a", "done", withLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueRemoved)),
	)
	tests := map[string]struct {
		opts         Options
		wantSelected int
		wantReleased int
		wantWould    int
		wantLeft     int // gated pods left afterwards, cluster-wide
	}{
		"dry run everywhere":      {opts: Options{DryRun: true, PageSize: 50}, wantSelected: 121, wantWould: 121, wantLeft: 121},
		"one namespace":           {opts: Options{Namespace: "team-b"}, wantSelected: 1, wantReleased: 1, wantLeft: 120},
		"selector":                {opts: Options{Selector: labels.SelectorFromSet(labels.Set{"app": "app-1"}), PageSize: 7}, wantSelected: 60, wantReleased: 60, wantLeft: 61},
		"everything, small pages": {opts: Options{PageSize: 13, Workers: 3}, wantSelected: 121, wantReleased: 121, wantLeft: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(objs...).Build()
			var mu sync.Mutex
			reported := 0
			tc.opts.Report = func(Outcome) { mu.Lock(); reported++; mu.Unlock() }
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

func TestRunPrintsWhatItDoes(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(pod("team-a", "web-1", gated()), pod("team-b", "web-2", gated())).Build()
	var out strings.Builder
	if _, err := Run(context.Background(), c, Options{Namespace: "team-a", DryRun: true}, &out); err != nil {
		t.Fatal(err)
	}
	want := "would release team-a/web-1\n" +
		"dry run: 1 pods gated by archgate in namespace team-a would be released (gate removed, affinity unchanged); nothing changed. Run again with --dry-run=false.\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("dry-run output (-want +got):\n%s", diff)
	}
	out.Reset()
	if _, err := Run(context.Background(), c, Options{}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 pods gated by archgate in every namespace: 2 released, 0 already released, 0 failed.") {
		t.Errorf("output:\n%s", out.String())
	}
}
