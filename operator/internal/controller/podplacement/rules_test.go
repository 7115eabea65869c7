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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementrules"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// rulesCPPC is a ClusterPodPlacementConfig with placement rules.
func rulesCPPC(rules ...v1beta1.PlacementRule) *v1beta1.ClusterPodPlacementConfig {
	c := cppc(nil)
	c.Spec.PlacementRules = rules
	return c
}

// TestReconcilePlacementRules: the controller evaluates the ClusterPodPlacementConfig's
// placement rules on the pod as the apiserver stores it and places it with the matched ones,
// in its one write (the annotation names them); a rule that cannot be evaluated does not apply
// and the pod gets one Warning Event naming it; rules that leave no architecture keep the pod
// Pending with an Event naming them; every evaluation is counted by rule and result.
func TestReconcilePlacementRules(t *testing.T) {
	const (
		multi = "reg.example/multi:1"
		amd   = "reg.example/amd:1"
	)
	all := []string{"amd64", "arm64", "ppc64le", "s390x"}
	scripts := map[string][]answer{multi: {ok(all...)}, amd: {ok("amd64")}}
	webArm := v1beta1.PlacementRule{Name: "web-arm", Expression: "object.metadata.labels.app == 'web'", RequiredArchitectures: []string{"arm64", "s390x"}}
	// The controller reads the pod from the apiserver: a rule sees its whole spec, not the
	// placement view the controller writes (which has no priorityClassName).
	batch := v1beta1.PlacementRule{Name: "batch", Expression: "object.spec.?priorityClassName.orValue('') == 'batch'", RequiredArchitectures: []string{"arm64"}}
	mlPrefers := v1beta1.PlacementRule{Name: "ml", Expression: "'app' in object.metadata.labels",
		PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{objects.Platform("arm64", 60)}}
	noTeam := v1beta1.PlacementRule{Name: "team", Expression: "object.metadata.labels.team == 'ml'", RequiredArchitectures: []string{"amd64"}}
	noOwner := v1beta1.PlacementRule{Name: "owner", Expression: "object.metadata.annotations.owner == 'x'", RequiredArchitectures: []string{"amd64"}}
	noMatch := v1beta1.PlacementRule{Name: "prod", Expression: "object.metadata.namespace.startsWith('prod-')", RequiredArchitectures: []string{"amd64"}}
	allAnn := "amd64,arm64,ppc64le,s390x"
	type metric struct{ rule, result string }
	tests := map[string]struct {
		pod         *corev1.Pod
		rules       []v1beta1.PlacementRule
		wantOutcome placement.Outcome
		wantAff     *corev1.Affinity
		wantAnn     map[string]string
		wantEvents  []recordedEvent
		wantNotes   []string // substrings of the Events' notes, one per Event
		wantMetrics map[metric]float64
	}{
		"matched rules narrow the required architectures and are recorded": {
			pod: gatedPod("p", multi).Build(), rules: []v1beta1.PlacementRule{noMatch, webArm},
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64", "s390x")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: allAnn, v1beta1.AnnotationPlacementRules: "web-arm"},
			wantMetrics: map[metric]float64{{"prod", "unmatched"}: 1, {"web-arm", "matched"}: 1},
		},
		"a rule reads the spec the controller does not write": {
			pod: func() *corev1.Pod {
				p := gatedPod("p", multi).Build()
				p.Spec.PriorityClassName = "batch"
				return p
			}(),
			rules:       []v1beta1.PlacementRule{batch},
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: allAnn, v1beta1.AnnotationPlacementRules: "batch"},
			wantMetrics: map[metric]float64{{"batch", "matched"}: 1},
		},
		"a rule's preference is the pod's source of weights": {
			pod: gatedPod("p", multi).Build(), rules: []v1beta1.PlacementRule{mlPrefers},
			wantOutcome: placement.OutcomeArchSet,
			wantAff: func() *corev1.Affinity {
				a := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn(all...)})
				a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{prefer(60, "arm64")}
				return a
			}(),
			wantAnn: map[string]string{v1beta1.AnnotationArchitectures: allAnn, v1beta1.AnnotationPlacementRules: "ml",
				v1beta1.AnnotationPreferredAffinitySource: "PlacementRule ml"},
			wantMetrics: map[metric]float64{{"ml", "matched"}: 1},
		},
		"rules that cannot be evaluated do not apply: one Warning Event names them": {
			pod: gatedPod("p", multi).Build(), rules: []v1beta1.PlacementRule{noTeam, webArm, noOwner},
			wantOutcome: placement.OutcomeArchSet,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("arm64", "s390x")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: allAnn, v1beta1.AnnotationPlacementRules: "web-arm"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonPlacementRuleFailed}},
			wantNotes:   []string{"team: no such key: team; owner: no such key: annotations"},
			wantMetrics: map[metric]float64{{"team", "error"}: 1, {"web-arm", "matched"}: 1, {"owner", "error"}: 1},
		},
		"rules that leave no architecture keep the pod Pending, and say so": {
			pod: gatedPod("p", amd).Build(), rules: []v1beta1.PlacementRule{webArm},
			wantOutcome: placement.OutcomeNoCommonArch,
			wantAff: objects.RequiredAffinity([]corev1.NodeSelectorRequirement{{Key: placement.NoSupportedArchitectureKey,
				Operator: corev1.NodeSelectorOpExists}}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: "amd64", v1beta1.AnnotationPlacementRules: "web-arm"},
			wantEvents:  []recordedEvent{{corev1.EventTypeWarning, reasonNoCommonArchitecture}},
			wantNotes:   []string{"The placement rules web-arm allow none of the architectures the images run on (amd64)"},
			wantMetrics: map[metric]float64{{"web-arm", "matched"}: 1},
		},
		"a user's pin is never narrowed": {
			pod:         gatedPod("p", multi).WithAffinity(objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")})).Build(),
			rules:       []v1beta1.PlacementRule{webArm},
			wantOutcome: placement.OutcomeUserPinned,
			wantAff:     objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64")}),
			wantAnn:     map[string]string{v1beta1.AnnotationArchitectures: allAnn, v1beta1.AnnotationPlacementRules: "web-arm"},
			wantMetrics: map[metric]float64{{"web-arm", "matched"}: 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{}, scripts, tc.pod, rulesCPPC(tc.rules...))
			h.drive(t, tc.pod.Name)
			got := h.pod(t, tc.pod.Name)
			if got.Labels[v1beta1.LabelPlacement] != tc.wantOutcome.LabelValue() {
				t.Errorf("placement label = %q, want %q", got.Labels[v1beta1.LabelPlacement], tc.wantOutcome)
			}
			if diff := cmp.Diff(tc.wantAff, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnn, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, h.recorder.events); diff != "" {
				t.Errorf("events (-want +got):\n%s\nnotes: %q", diff, h.recorder.notes)
			}
			for i, want := range tc.wantNotes {
				if i >= len(h.recorder.notes) || !strings.Contains(h.recorder.notes[i], want) {
					t.Errorf("notes %q, want note %d to contain %q", h.recorder.notes, i, want)
				}
			}
			// The throughput rule: the rules cost no write of their own.
			if h.writes != 1 {
				t.Errorf("apiserver writes = %d, want 1", h.writes)
			}
			for _, r := range tc.rules {
				for _, result := range []placementrules.Result{placementrules.Matched, placementrules.Unmatched, placementrules.Failed} {
					m := metric{r.Name, string(result)}
					if got := testutil.ToFloat64(h.r.metrics.ruleEvaluations.WithLabelValues(m.rule, m.result)); got != tc.wantMetrics[m] {
						t.Errorf("archgate_placement_rule_evaluations_total%v = %v, want %v", m, got, tc.wantMetrics[m])
					}
				}
			}
		})
	}
}

// TestReconcileWithoutRulesEvaluatesNothing: a ClusterPodPlacementConfig without rules adds
// nothing to a pod, and no evaluation is counted.
func TestReconcileWithoutRulesEvaluatesNothing(t *testing.T) {
	h := newHarness(t, Options{}, map[string][]answer{"a:1": {ok("amd64")}}, []client.Object{gatedPod("p", "a:1").Build(), cppc(nil)}...)
	h.drive(t, "p")
	if _, ok := h.pod(t, "p").Annotations[v1beta1.AnnotationPlacementRules]; ok {
		t.Error("placement-rules annotation set without rules")
	}
	if n := testutil.CollectAndCount(h.r.metrics.ruleEvaluations); n != 0 {
		t.Errorf("%d rule evaluation series, want none", n)
	}
}

// TestReconcileRecordsRuleOverlaps: a placement rule whose weights a PodPlacementConfig took
// precedence over is an overlap like any other, recorded on the ClusterPodPlacementConfig that
// holds the rule and naming it; each pod is still written once.
func TestReconcileRecordsRuleOverlaps(t *testing.T) {
	sink := &countingSink{created: map[string][]*corev1.Event{}}
	o := NewOverlapEvents(sink, OverlapEventsOptions{Scheme: testScheme(t)})
	defer o.Stop()
	ml := v1beta1.PlacementRule{Name: "ml", Expression: "true", PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{objects.Platform("amd64", 10)}}
	objs := []client.Object{rulesCPPC(ml), objects.PodPlacementConfig(testNamespace, "arm-first").WithPriority(10).WithPlatforms(objects.Platform("arm64", 75)).Build(), gatedPod("p1", "reg.example/multi:1").Build()}
	h := newHarness(t, Options{OverlapEvents: o}, map[string][]answer{"reg.example/multi:1": {ok("amd64", "arm64")}}, objs...)
	h.drive(t, "p1")
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return sink.count(v1beta1.SingletonName) == 1, nil }); err != nil {
		t.Fatalf("overlap Events about the ClusterPodPlacementConfig: %d, want 1", sink.count(v1beta1.SingletonName))
	}
	if msg := sink.created[v1beta1.SingletonName][0].Message; !strings.Contains(msg, "PlacementRule ml") {
		t.Errorf("overlap Event %q does not name the rule", msg)
	}
	if got := h.pod(t, "p1").Annotations[v1beta1.AnnotationPreferredAffinitySource]; got != "PodPlacementConfig team/arm-first" {
		t.Errorf("preferred-affinity-source = %q, want the PodPlacementConfig", got)
	}
	if h.writes != 1 {
		t.Errorf("apiserver writes = %d, want 1", h.writes)
	}
}
