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

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestMergeNoCommonArchitecture(t *testing.T) {
	none := NoSupportedArchitectureRequirement()
	matchName := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}
	userPreferred := []corev1.PreferredSchedulingTerm{preferred(10, archIn("arm64"))}
	podAntiAffinity := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}

	tests := map[string]struct {
		spec     corev1.PodSpec
		wantSpec *corev1.PodSpec // nil: unchanged
	}{
		"nil affinity gets one unsatisfiable term": {
			spec:     corev1.PodSpec{},
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(term(none))},
		},
		"empty node affinity gets one unsatisfiable term": {
			spec:     corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(term(none))},
		},
		"required selector without terms gets one unsatisfiable term": {
			spec:     corev1.PodSpec{Affinity: requiredAffinity()},
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(term(none))},
		},
		"every selecting term gets the requirement, arch pins included": {
			spec: corev1.PodSpec{Affinity: requiredAffinity(
				term(zoneIn("a")),
				term(archIn("amd64")),
				corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{matchName}},
			)},
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(
				term(zoneIn("a"), none),
				term(archIn("amd64"), none),
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{none}, MatchFields: []corev1.NodeSelectorRequirement{matchName}},
			)},
		},
		"empty terms match nothing and are kept": {
			spec:     corev1.PodSpec{Affinity: requiredAffinity(term(), term(zoneIn("a")))},
			wantSpec: &corev1.PodSpec{Affinity: requiredAffinity(term(), term(zoneIn("a"), none))},
		},
		"already unsatisfiable: unchanged": {
			spec: corev1.PodSpec{Affinity: requiredAffinity(term(zoneIn("a"), none), term())},
		},
		"nodeSelector pin, preferred terms and pod anti-affinity are kept": {
			spec: corev1.PodSpec{
				NodeSelector: map[string]string{v1beta1.NodeArchLabel: "arm64"},
				Affinity: &corev1.Affinity{
					NodeAffinity:    &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: userPreferred},
					PodAntiAffinity: podAntiAffinity,
				},
			},
			wantSpec: &corev1.PodSpec{
				NodeSelector: map[string]string{v1beta1.NodeArchLabel: "arm64"},
				Affinity: &corev1.Affinity{
					NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(none)}},
						PreferredDuringSchedulingIgnoredDuringExecution: userPreferred,
					},
					PodAntiAffinity: podAntiAffinity,
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			original := tc.spec.DeepCopy()
			spec := tc.spec
			if got := MergeNoCommonArchitecture(&spec); got != OutcomeNoCommonArch {
				t.Errorf("outcome = %q, want %q", got, OutcomeNoCommonArch)
			}
			want := tc.wantSpec
			if want == nil {
				want = original
			}
			if diff := cmp.Diff(want, &spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(original, &tc.spec); diff != "" {
				t.Errorf("the input's shared memory was written (-before +after):\n%s", diff)
			}
		})
	}
}
