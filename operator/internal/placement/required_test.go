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

package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestMergeRequiredArchitectures(t *testing.T) {
	matchName := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}
	userPreferred := []corev1.PreferredSchedulingTerm{preferred(10, archIn("arm64")), preferred(5, zoneIn("a"))}
	podAntiAffinity := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}

	tests := map[string]struct {
		spec        corev1.PodSpec
		archs       []string
		wantOutcome Outcome
		wantSpec    *corev1.PodSpec // nil: spec must be unchanged
	}{
		"nil affinity gets one arch term": {
			spec:        corev1.PodSpec{},
			archs:       []string{"arm64", "amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64", "arm64")))},
		},
		"empty affinity gets one arch term": {
			spec:        corev1.PodSpec{Affinity: &corev1.Affinity{}},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64")))},
		},
		"empty node affinity gets one arch term": {
			spec:        corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64")))},
		},
		"required selector without terms gets one arch term": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity()},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64")))},
		},
		"values are sorted": {
			spec:        corev1.PodSpec{},
			archs:       []string{"s390x", "ppc64le", "amd64", "arm64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64", "arm64", "ppc64le", "s390x")))},
		},
		"term without arch gets it appended": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(zoneIn("a", "b")))},
			archs:       []string{"arm64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(zoneIn("a", "b"), archIn("arm64")))},
		},
		"every term without arch gets it": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(zoneIn("a")), term(expr("disk", corev1.NodeSelectorOpExists)))},
			archs:       []string{"arm64", "amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(
				term(zoneIn("a"), archIn("amd64", "arm64")),
				term(expr("disk", corev1.NodeSelectorOpExists), archIn("amd64", "arm64")),
			)},
		},
		"term with arch is the user's: pinned": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(zoneIn("a"), archIn("s390x")))},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeUserPinned,
		},
		"arch NotIn counts as a user constraint": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(expr(v1beta1.NodeArchLabel, corev1.NodeSelectorOpNotIn, "arm64")))},
			archs:       []string{"amd64", "arm64"},
			wantOutcome: OutcomeUserPinned,
		},
		"mixed terms: only the one without arch is patched, order kept": {
			spec: corev1.PodSpec{Affinity: requiredAffinity(
				term(archIn("s390x"), zoneIn("a")),
				term(zoneIn("b")),
				term(expr(v1beta1.NodeArchLabel, corev1.NodeSelectorOpExists)),
			)},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(
				term(archIn("s390x"), zoneIn("a")),
				term(zoneIn("b"), archIn("amd64")),
				term(expr(v1beta1.NodeArchLabel, corev1.NodeSelectorOpExists)),
			)},
		},
		"matchFields-only term gets a matchExpression": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{matchName}})},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{archIn("amd64")},
				MatchFields:      []corev1.NodeSelectorRequirement{matchName},
			})},
		},
		"matchFields on the arch key do not count": {
			spec: corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"s390x"}}},
			})},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{archIn("amd64")},
				MatchFields:      []corev1.NodeSelectorRequirement{{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"s390x"}}},
			})},
		},
		"empty term matches no node and stays empty": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(), term(zoneIn("a")))},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec:    &corev1.PodSpec{Affinity: requiredAffinity(term(), term(zoneIn("a"), archIn("amd64")))},
		},
		"only empty terms: nothing to add": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(), term())},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeUserPinned,
		},
		"nodeSelector arch pin: user pinned, affinity untouched": {
			spec: corev1.PodSpec{
				NodeSelector: map[string]string{v1beta1.NodeArchLabel: "arm64"},
				Affinity:     requiredAffinity(term(zoneIn("a"))),
			},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeUserPinned,
		},
		"nodeSelector arch pin wins over no common arch": {
			spec:        corev1.PodSpec{NodeSelector: map[string]string{v1beta1.NodeArchLabel: "arm64"}},
			archs:       nil,
			wantOutcome: OutcomeUserPinned,
		},
		"nodeSelector with other keys is ANDed and kept": {
			spec:        corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd", "beta.kubernetes.io/arch": "amd64"}},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec: &corev1.PodSpec{
				NodeSelector: map[string]string{"disk": "ssd", "beta.kubernetes.io/arch": "amd64"},
				Affinity:     requiredAffinity(term(archIn("amd64"))),
			},
		},
		"user preferred terms and pod anti-affinity are kept": {
			spec: corev1.PodSpec{Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: userPreferred},
				PodAntiAffinity: podAntiAffinity,
			}},
			archs:       []string{"amd64"},
			wantOutcome: OutcomeArchSet,
			wantSpec: &corev1.PodSpec{Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(archIn("amd64"))}},
					PreferredDuringSchedulingIgnoredDuringExecution: userPreferred,
				},
				PodAntiAffinity: podAntiAffinity,
			}},
		},
		"no common architecture: unchanged": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(zoneIn("a")))},
			archs:       []string{},
			wantOutcome: OutcomeNoCommonArch,
		},
		"nil architecture set: no common architecture": {
			spec:        corev1.PodSpec{},
			archs:       nil,
			wantOutcome: OutcomeNoCommonArch,
		},
		"user pinned and no common architecture: user pinned": {
			spec:        corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64")))},
			archs:       nil,
			wantOutcome: OutcomeUserPinned,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			original := tc.spec.DeepCopy()
			spec := tc.spec // shallow copy: the function must not write through shared pointers
			gotOutcome := MergeRequiredArchitectures(&spec, sets.New(tc.archs...))
			if gotOutcome != tc.wantOutcome {
				t.Errorf("outcome = %q, want %q", gotOutcome, tc.wantOutcome)
			}
			wantSpec := tc.wantSpec
			if wantSpec == nil {
				wantSpec = original
			}
			if diff := cmp.Diff(wantSpec, &spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(original, &tc.spec); diff != "" {
				t.Errorf("the input's shared memory was written (-before +after):\n%s", diff)
			}
			if got := UserPinsArchitecture(original); got != (tc.wantOutcome == OutcomeUserPinned) {
				t.Errorf("UserPinsArchitecture = %t, want %t", got, tc.wantOutcome == OutcomeUserPinned)
			}
			// Idempotence: a second merge never changes anything.
			again := *spec.DeepCopy()
			if second := MergeRequiredArchitectures(&again, sets.New(tc.archs...)); second == OutcomeArchSet {
				t.Errorf("second merge returned %q, want no change", second)
			}
			if diff := cmp.Diff(&spec, &again); diff != "" {
				t.Errorf("second merge changed the spec (-first +second):\n%s", diff)
			}
		})
	}
}

func TestOutcomeLabelValues(t *testing.T) {
	tests := map[Outcome]string{
		OutcomeArchSet:          v1beta1.PlacementArchSet,
		OutcomeUserPinned:       v1beta1.PlacementUserPinned,
		OutcomeNoCommonArch:     v1beta1.PlacementNoCommonArch,
		OutcomeInspectionFailed: v1beta1.PlacementInspectionFailed,
	}
	for o, want := range tests {
		if got := o.LabelValue(); got != want {
			t.Errorf("%q.LabelValue() = %q, want %q", o, got, want)
		}
	}
}
