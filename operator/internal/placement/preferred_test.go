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

func TestMergePreferredArchitectures(t *testing.T) {
	high := SourceRef{Kind: KindPodPlacementConfig, Namespace: "team", Name: "high"}
	low := SourceRef{Kind: KindPodPlacementConfig, Namespace: "team", Name: "low"}
	cluster := SourceRef{Kind: KindClusterPodPlacementConfig, Name: "cluster"}
	all := []string{"amd64", "arm64", "ppc64le", "s390x"}
	required := requiredAffinity(term(archIn("amd64", "arm64")))
	preferredOnly := func(terms ...corev1.PreferredSchedulingTerm) *corev1.PodSpec {
		return &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}}
	}

	tests := map[string]struct {
		spec               corev1.PodSpec
		compatible         []string
		sources            []ScoringSource
		wantSpec           *corev1.PodSpec // nil: unchanged
		wantApplied        []Preference
		wantSkipped        []SkippedPreference
		wantSkippedSources []SkippedSource
	}{
		"no sources": {
			spec:       corev1.PodSpec{Affinity: required},
			compatible: all,
		},
		"cluster config only": {
			spec:        corev1.PodSpec{},
			compatible:  all,
			sources:     []ScoringSource{{Ref: cluster, Platforms: platforms("arm64", 75, "amd64", 25)}},
			wantSpec:    preferredOnly(preferred(75, archIn("arm64")), preferred(25, archIn("amd64"))),
			wantApplied: []Preference{{cluster, "arm64", 75}, {cluster, "amd64", 25}},
		},
		"required terms are untouched": {
			spec:       corev1.PodSpec{Affinity: required},
			compatible: []string{"amd64", "arm64"},
			sources:    []ScoringSource{{Ref: cluster, Platforms: platforms("amd64", 10)}},
			wantSpec: &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  required.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{preferred(10, archIn("amd64"))},
			}}},
			wantApplied: []Preference{{cluster, "amd64", 10}},
		},
		"highest priority config wins whole; lower configs and the cluster are skipped whole": {
			spec:       corev1.PodSpec{},
			compatible: all,
			sources: []ScoringSource{
				{Ref: high, Platforms: platforms("arm64", 90)},
				{Ref: low, Platforms: platforms("arm64", 10, "amd64", 20)},
				{Ref: cluster, Platforms: platforms("amd64", 50, "ppc64le", 5)},
			},
			wantSpec:    preferredOnly(preferred(90, archIn("arm64"))),
			wantApplied: []Preference{{high, "arm64", 90}},
			wantSkippedSources: []SkippedSource{
				{Source: low, Reason: SkipHigherPriority, By: high},
				{Source: cluster, Reason: SkipHigherPriority, By: high},
			},
		},
		"a source with nothing applicable neither applies nor blocks": {
			spec:       corev1.PodSpec{},
			compatible: []string{"amd64"},
			sources: []ScoringSource{
				{Ref: high, Platforms: platforms("arm64", 90, "s390x", 0)},
				{Ref: cluster, Platforms: platforms("amd64", 50, "arm64", 50)},
			},
			wantSpec:    preferredOnly(preferred(50, archIn("amd64"))),
			wantApplied: []Preference{{cluster, "amd64", 50}},
			wantSkipped: []SkippedPreference{
				{Preference: Preference{high, "arm64", 90}, Reason: SkipIncompatible},
				{Preference: Preference{high, "s390x", 0}, Reason: SkipIncompatible},
				{Preference: Preference{cluster, "arm64", 50}, Reason: SkipIncompatible},
			},
		},
		"any user preferred arch term skips every source and is kept": {
			spec: *preferredOnly(
				preferred(3, archIn("arm64"), zoneIn("a")),
				preferred(100, zoneIn("b")),
			),
			compatible: all,
			sources: []ScoringSource{
				{Ref: high, Platforms: platforms("s390x", 60)},
				{Ref: cluster, Platforms: platforms("arm64", 75, "amd64", 25)},
			},
			wantSkippedSources: []SkippedSource{
				{Source: high, Reason: SkipPodPreference},
				{Source: cluster, Reason: SkipPodPreference},
			},
		},
		"user arch term with another operator counts too": {
			spec:               *preferredOnly(preferred(4, expr(v1beta1.NodeArchLabel, corev1.NodeSelectorOpNotIn, "s390x"))),
			compatible:         all,
			sources:            []ScoringSource{{Ref: cluster, Platforms: platforms("amd64", 25)}},
			wantSkippedSources: []SkippedSource{{Source: cluster, Reason: SkipPodPreference}},
		},
		"user preferred terms on other keys do not block": {
			spec:       *preferredOnly(preferred(100, zoneIn("b"))),
			compatible: all,
			sources:    []ScoringSource{{Ref: cluster, Platforms: platforms("amd64", 25)}},
			wantSpec:   preferredOnly(preferred(100, zoneIn("b")), preferred(25, archIn("amd64"))),
			wantApplied: []Preference{
				{cluster, "amd64", 25},
			},
		},
		"only compatible architectures get weights": {
			spec:        corev1.PodSpec{},
			compatible:  []string{"amd64"},
			sources:     []ScoringSource{{Ref: cluster, Platforms: platforms("arm64", 75, "amd64", 25)}},
			wantSpec:    preferredOnly(preferred(25, archIn("amd64"))),
			wantApplied: []Preference{{cluster, "amd64", 25}},
			wantSkipped: []SkippedPreference{{Preference: Preference{cluster, "arm64", 75}, Reason: SkipIncompatible}},
		},
		"incompatible platforms do not make a conflict with the user": {
			spec:        *preferredOnly(preferred(1, archIn("arm64"))),
			compatible:  []string{"amd64"},
			sources:     []ScoringSource{{Ref: cluster, Platforms: platforms("arm64", 75)}},
			wantSkipped: []SkippedPreference{{Preference: Preference{cluster, "arm64", 75}, Reason: SkipIncompatible}},
		},
		"no compatible set: nothing applied, affinity stays nil": {
			spec:        corev1.PodSpec{},
			compatible:  nil,
			sources:     []ScoringSource{{Ref: cluster, Platforms: platforms("amd64", 25)}},
			wantSkipped: []SkippedPreference{{Preference: Preference{cluster, "amd64", 25}, Reason: SkipIncompatible}},
		},
		"weights outside 1-100 are skipped": {
			spec:       corev1.PodSpec{},
			compatible: all,
			sources:    []ScoringSource{{Ref: cluster, Platforms: platforms("amd64", 0, "arm64", 101)}},
			wantSkipped: []SkippedPreference{
				{Preference: Preference{cluster, "amd64", 0}, Reason: SkipInvalidWeight},
				{Preference: Preference{cluster, "arm64", 101}, Reason: SkipInvalidWeight},
			},
		},
		"duplicate architecture within one source: first wins": {
			spec:        corev1.PodSpec{},
			compatible:  all,
			sources:     []ScoringSource{{Ref: high, Platforms: platforms("amd64", 1, "amd64", 2)}},
			wantSpec:    preferredOnly(preferred(1, archIn("amd64"))),
			wantApplied: []Preference{{high, "amd64", 1}},
			wantSkipped: []SkippedPreference{{Preference: Preference{high, "amd64", 2}, Reason: SkipDuplicate}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			original := tc.spec.DeepCopy()
			spec := tc.spec
			got := MergePreferredArchitectures(&spec, sets.New(tc.compatible...), tc.sources)
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
			want := PreferredResult{Applied: tc.wantApplied, Skipped: tc.wantSkipped, SkippedSources: tc.wantSkippedSources}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			var wantConflicts []SkippedSource
			for _, s := range tc.wantSkippedSources {
				if s.Reason == SkipPodPreference {
					wantConflicts = append(wantConflicts, s)
				}
			}
			if diff := cmp.Diff(wantConflicts, got.Conflicts()); diff != "" {
				t.Errorf("Conflicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodPrefersArchitecture(t *testing.T) {
	tests := map[string]struct {
		spec corev1.PodSpec
		want bool
	}{
		"nil affinity":       {spec: corev1.PodSpec{}},
		"nil node affinity":  {spec: corev1.PodSpec{Affinity: &corev1.Affinity{}}},
		"required arch only": {spec: corev1.PodSpec{Affinity: requiredAffinity(term(archIn("amd64")))}},
		"preferred zone only": {spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{preferred(1, zoneIn("a"))},
		}}}},
		"preferred arch DoesNotExist": {spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{preferred(1, zoneIn("a")), preferred(1, expr(v1beta1.NodeArchLabel, corev1.NodeSelectorOpDoesNotExist))},
		}}}, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PodPrefersArchitecture(&tc.spec); got != tc.want {
				t.Errorf("PodPrefersArchitecture() = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestSourceRefString(t *testing.T) {
	tests := map[string]struct {
		ref  SourceRef
		want string
	}{
		"pod":        {ref: SourceRef{}, want: "pod"},
		"namespaced": {ref: SourceRef{Kind: KindPodPlacementConfig, Namespace: "ns", Name: "a"}, want: "PodPlacementConfig ns/a"},
		"cluster":    {ref: SourceRef{Kind: KindClusterPodPlacementConfig, Name: "cluster"}, want: "ClusterPodPlacementConfig cluster"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.ref.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
