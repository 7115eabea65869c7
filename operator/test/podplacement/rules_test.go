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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// TestPlacementRules: placement rules created through the ClusterPodPlacementConfig place pods
// on both paths. The controller narrows and weights the pods a rule matches, records the rule in
// its one write, and reports a rule it cannot evaluate for a pod with a Warning Event and the
// metric; the admission-placement webhook places a matched pod at admission exactly as the
// controller did, and gates a pod a rule fails for, which the controller then reports.
func TestPlacementRules(t *testing.T) {
	startController(t)
	ns, admissionNS := newNamespace(t), newNamespace(t)
	labelNamespace(t, admissionNS)
	multi := s.main.Reference("library/multi", "latest")
	// The rules read only this test's namespaces, so that no other test's pod matches or fails.
	ours := fmt.Sprintf("object.metadata.namespace in [%q, %q]", ns, admissionNS)
	cppc := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{PlacementRules: []v1beta1.PlacementRule{
			{Name: "ml-arm", Expression: ours + " && object.metadata.?labels.?team.orValue('') == 'ml'",
				RequiredArchitectures:  []string{"arm64", "s390x"},
				PreferredArchitectures: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 80}}},
			// Fails for a pod without annotations: read without has().
			{Name: "owner", Expression: ours + " && object.metadata.annotations.owner == 'data'", RequiredArchitectures: []string{"amd64"}},
		}}}
	if err := s.client.Create(s.ctx, cppc); err != nil {
		t.Fatalf("creating the ClusterPodPlacementConfig: %v", err)
	}
	t.Cleanup(func() {
		if err := s.client.Delete(context.Background(), cppc); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting the ClusterPodPlacementConfig: %v", err)
		}
	})
	mlPod := func(namespace, name string) *corev1.Pod {
		p := pod(namespace, name, multi)
		p.Labels["team"] = "ml"
		p.Annotations = map[string]string{"owner": "ml-team"}
		return p
	}
	wantML := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{objects.ArchIn("arm64", "s390x")}}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 80, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}}}},
	}}

	// The controller reads the configuration from its informer: probe pods until one is placed
	// with the rules.
	probes := 0
	eventually(t, "the controller applying the placement rules", func(context.Context) (bool, error) {
		probes++
		probe := waitUngated(t, create(t, mlPod(ns, fmt.Sprintf("probe-%d", probes)), true))
		return probe.Annotations[v1beta1.AnnotationPlacementRules] == "ml-arm", nil
	})

	pw := watchPods(t, ns)
	// Read before the pods exist: the controller may evaluate them before create returns.
	failedBefore := metric(t, s.controllerMetrics, "archgate_placement_rule_evaluations_total", map[string]string{"rule": "owner", "result": "error"})
	ml := create(t, mlPod(ns, "ml"), true)
	noOwner := create(t, pod(ns, "no-owner", multi), true)
	writes := pw.untilUngated(t, ml.Name, noOwner.Name)

	t.Run("a matched rule narrows and weights, in the controller's one write", func(t *testing.T) {
		got := waitUngated(t, ml)
		if diff := cmp.Diff(wantML, got.Spec.Affinity); diff != "" {
			t.Errorf("affinity (-want +got):\n%s", diff)
		}
		for k, want := range map[string]string{v1beta1.AnnotationPlacementRules: "ml-arm", v1beta1.AnnotationPreferredAffinitySource: "PlacementRule ml-arm",
			v1beta1.AnnotationArchitectures: "amd64,arm64,ppc64le,s390x"} {
			if got.Annotations[k] != want {
				t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], want)
			}
		}
		if n := writes[ml.Name]; n != 1 {
			t.Errorf("pod modified %d times after creation, want exactly 1", n)
		}
		if events := podEvents(t, got); len(events) != 0 {
			t.Errorf("events %v, want none", events)
		}
	})
	t.Run("a rule that fails for a pod does not apply, and is reported", func(t *testing.T) {
		got := waitUngated(t, noOwner)
		if diff := cmp.Diff(objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("amd64", "arm64", "ppc64le", "s390x")}), got.Spec.Affinity); diff != "" {
			t.Errorf("affinity (-want +got):\n%s", diff)
		}
		if a, ok := got.Annotations[v1beta1.AnnotationPlacementRules]; ok {
			t.Errorf("placement-rules annotation %q, want none", a)
		}
		if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() {
			t.Errorf("placement label = %q", got.Labels[v1beta1.LabelPlacement])
		}
		e := waitEvent(t, got, "PlacementRuleFailed")
		if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "owner: no such key: annotations") {
			t.Errorf("event %s %q, want a Warning naming the rule owner and CEL's error", e.Type, e.Note)
		}
		if n := writes[noOwner.Name]; n != 1 {
			t.Errorf("pod modified %d times after creation, want exactly 1 (the Event is not a pod write)", n)
		}
		if got := metric(t, s.controllerMetrics, "archgate_placement_rule_evaluations_total", map[string]string{"rule": "owner", "result": "error"}); got-failedBefore != 1 {
			t.Errorf("owner's evaluations in error grew by %v, want 1", got-failedBefore)
		}
	})

	t.Run("admission placement applies the same rules", func(t *testing.T) {
		// The controller has published the image; the webhook's informers follow. Dry runs
		// show when the webhook places the pod with the rules, without leaving pods behind.
		eventually(t, "the webhook placing a matched pod at admission", func(ctx context.Context) (bool, error) {
			probe := mlPod(admissionNS, "probe")
			if err := s.client.Create(ctx, probe, client.DryRunAll); err != nil {
				return false, err
			}
			return probe.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission &&
				probe.Annotations[v1beta1.AnnotationPlacementRules] == "ml-arm", nil
		})
		placed := create(t, mlPod(admissionNS, "ml"), false)
		if placed.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueAdmission {
			t.Fatalf("labels %v, want placed at admission", placed.Labels)
		}
		if diff := cmp.Diff(wantML, placed.Spec.Affinity); diff != "" {
			t.Errorf("affinity at admission (-want +got):\n%s", diff)
		}
		if a := placed.Annotations[v1beta1.AnnotationPreferredAffinitySource]; a != "PlacementRule ml-arm" {
			t.Errorf("preferred-affinity-source = %q", a)
		}
		// A rule fails for this one: the webhook gates it, the controller reports it.
		failing := waitUngated(t, create(t, pod(admissionNS, "no-owner", multi), true))
		if e := waitEvent(t, failing, "PlacementRuleFailed"); e.Type != corev1.EventTypeWarning {
			t.Errorf("event type = %q", e.Type)
		}
	})
}
