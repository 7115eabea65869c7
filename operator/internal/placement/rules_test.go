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
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// decided is what a test of Decide compares: what the pod got, and what the decision says.
type decided struct {
	Outcome     Outcome
	NoCommon    bool
	Required    []corev1.NodeSelectorTerm
	Preferred   []string // architecture/weight of the preferred terms, in order
	Source      string
	Skipped     []string // the sources skipped whole, "source (reason)"
	RequiredBy  []string
	Annotations map[string]string
	Tolerations []corev1.Toleration
}

func decidedOf(pod *corev1.Pod, d Decision) decided {
	out := decided{Outcome: d.Outcome, NoCommon: d.NoCommonArchitecture, Source: d.PreferenceSource, RequiredBy: d.RequiredBy,
		Annotations: d.Annotations(), Tolerations: pod.Spec.Tolerations}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			out.Required = r.NodeSelectorTerms
		}
		for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			out.Preferred = append(out.Preferred, fmt.Sprintf("%s/%d", p.Preference.MatchExpressions[0].Values, p.Weight))
		}
	}
	for _, s := range d.Preferred.SkippedSources {
		out.Skipped = append(out.Skipped, fmt.Sprintf("%s (%s)", s.Source, s.Reason))
	}
	return out
}

// TestDecidePlacementRules: what the matched placement rules do to a pod's placement: every
// rule's requiredArchitectures narrows what the images support (to nothing: the pod is kept
// Pending as for images sharing no architecture), never a user's pin; the first rule with
// preferences weights the pod after its label and its PodPlacementConfigs, before the
// cluster's nodeAffinityScoring, and only where the cluster's preferences apply.
func TestDecidePlacementRules(t *testing.T) {
	all := []string{"amd64", "arm64", "ppc64le", "s390x"}
	multi := []ImageArchitectures{archsResult("amd64", "arm64", "s390x")}
	anywhere := []ImageArchitectures{{AnyArchitecture: true}}
	bare := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}
	scoringCluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: scoring(true, platforms("amd64", 10))}}
	amdFirst := v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "amd-first"},
		Spec: v1beta1.PodPlacementConfigSpec{Priority: 10, Plugins: scoring(true, platforms("amd64", 70))}}
	armOnly := v1beta1.PlacementRule{Name: "arm-only", RequiredArchitectures: []string{"arm64"}}
	notPower := v1beta1.PlacementRule{Name: "not-power", RequiredArchitectures: []string{"amd64", "arm64", "s390x"}}
	noAmd := v1beta1.PlacementRule{Name: "no-amd", RequiredArchitectures: []string{"arm64", "s390x"}}
	amdOnly := v1beta1.PlacementRule{Name: "amd-only", RequiredArchitectures: []string{"amd64"}}
	mlPrefers := v1beta1.PlacementRule{Name: "ml", PreferredArchitectures: platforms("arm64", 60, "s390x", 5)}
	laterPrefers := v1beta1.PlacementRule{Name: "later", PreferredArchitectures: platforms("amd64", 90)}
	required := func(archs ...string) []corev1.NodeSelectorTerm {
		return []corev1.NodeSelectorTerm{term(archIn(archs...))}
	}
	noNode := []corev1.NodeSelectorTerm{term(NoSupportedArchitectureRequirement())}
	annotations := func(archs, source, rules string) map[string]string {
		a := map[string]string{v1beta1.AnnotationArchitectures: archs}
		if source != "" {
			a[v1beta1.AnnotationPreferredAffinitySource] = source
		}
		if rules != "" {
			a[v1beta1.AnnotationPlacementRules] = rules
		}
		return a
	}
	pinnedByAffinity := requiredAffinity(term(archIn("amd64", "s390x")))

	tests := map[string]struct {
		images       []ImageArchitectures
		label        string // the pod's preferred-architecture label
		affinity     *corev1.Affinity
		nodeSelector map[string]string
		configs      []v1beta1.PodPlacementConfig
		cluster      *v1beta1.ClusterPodPlacementConfig // nil: the cluster's preferences do not apply (ClusterStage)
		taints       []v1beta1.ArchitectureTaint
		rules        []v1beta1.PlacementRule
		want         decided
	}{
		"no rule matched: the images decide, the cluster weights": {
			images: multi, cluster: scoringCluster,
			want: decided{Outcome: OutcomeArchSet, Required: required("amd64", "arm64", "s390x"), Preferred: []string{"[amd64]/10"},
				Source: "ClusterPodPlacementConfig cluster", Annotations: annotations("amd64,arm64,s390x", "ClusterPodPlacementConfig cluster", "")},
		},
		"a rule narrows the images' architectures; the cluster's weight is now incompatible": {
			images: multi, cluster: scoringCluster, rules: []v1beta1.PlacementRule{noAmd},
			want: decided{Outcome: OutcomeArchSet, Required: required("arm64", "s390x"), RequiredBy: []string{"no-amd"},
				Annotations: annotations("amd64,arm64,s390x", "", "no-amd")},
		},
		"every matching rule narrows, in order": {
			images: []ImageArchitectures{archsResult(all...)}, rules: []v1beta1.PlacementRule{notPower, noAmd},
			want: decided{Outcome: OutcomeArchSet, Required: required("arm64", "s390x"), RequiredBy: []string{"not-power", "no-amd"},
				Annotations: annotations("amd64,arm64,ppc64le,s390x", "", "not-power,no-amd")},
		},
		"narrowed to nothing: kept Pending as for images sharing no architecture, no weight": {
			images: []ImageArchitectures{archsResult("amd64", "s390x")}, cluster: scoringCluster, rules: []v1beta1.PlacementRule{armOnly, mlPrefers},
			want: decided{Outcome: OutcomeNoCommonArch, NoCommon: true, Required: noNode, RequiredBy: []string{"arm-only"},
				Annotations: annotations("amd64,s390x", "", "arm-only,ml")},
		},
		"images sharing no architecture: the rules change nothing but are recorded": {
			images: []ImageArchitectures{archsResult("amd64"), archsResult("arm64")}, rules: []v1beta1.PlacementRule{armOnly},
			want: decided{Outcome: OutcomeNoCommonArch, NoCommon: true, Required: noNode, Annotations: annotations("", "", "arm-only")},
		},
		"images that run anywhere get the rule's architectures": {
			images: anywhere, rules: []v1beta1.PlacementRule{noAmd},
			want: decided{Outcome: OutcomeArchSet, Required: required("arm64", "s390x"), RequiredBy: []string{"no-amd"},
				Annotations: annotations(AnnotationValueAnyArchitecture, "", "no-amd")},
		},
		"images that run anywhere, a rule with preferences only: still any architecture": {
			images: anywhere, cluster: scoringCluster, rules: []v1beta1.PlacementRule{mlPrefers},
			want: decided{Outcome: OutcomeAnyArchitecture, Preferred: []string{"[arm64]/60", "[s390x]/5"}, Source: "PlacementRule ml",
				Skipped:     []string{"ClusterPodPlacementConfig cluster (HigherPriorityConfig)"},
				Annotations: annotations(AnnotationValueAnyArchitecture, "PlacementRule ml", "ml")},
		},
		"a user's nodeSelector pin is never narrowed": {
			images: multi, nodeSelector: map[string]string{v1beta1.NodeArchLabel: "amd64"}, rules: []v1beta1.PlacementRule{armOnly},
			want: decided{Outcome: OutcomeUserPinned, Annotations: annotations("amd64,arm64,s390x", "", "arm-only")},
		},
		"a user's required terms pin: never narrowed, weighted among what the images support": {
			images: multi, affinity: pinnedByAffinity, cluster: scoringCluster, rules: []v1beta1.PlacementRule{noAmd, laterPrefers},
			want: decided{Outcome: OutcomeUserPinned, Required: pinnedByAffinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
				Preferred: []string{"[amd64]/90"}, Source: "PlacementRule later",
				Skipped:     []string{"ClusterPodPlacementConfig cluster (HigherPriorityConfig)"},
				Annotations: annotations("amd64,arm64,s390x", "PlacementRule later", "no-amd,later")},
		},
		"the rule's weights over the cluster's": {
			images: multi, cluster: scoringCluster, rules: []v1beta1.PlacementRule{mlPrefers},
			want: decided{Outcome: OutcomeArchSet, Required: required("amd64", "arm64", "s390x"), Preferred: []string{"[arm64]/60", "[s390x]/5"},
				Source: "PlacementRule ml", Skipped: []string{"ClusterPodPlacementConfig cluster (HigherPriorityConfig)"},
				Annotations: annotations("amd64,arm64,s390x", "PlacementRule ml", "ml")},
		},
		"only the first matching rule with preferences weights": {
			images: multi, cluster: bare, rules: []v1beta1.PlacementRule{notPower, mlPrefers, laterPrefers},
			want: decided{Outcome: OutcomeArchSet, Required: required("amd64", "arm64", "s390x"), Preferred: []string{"[arm64]/60", "[s390x]/5"},
				Source: "PlacementRule ml", RequiredBy: []string{"not-power"}, Annotations: annotations("amd64,arm64,s390x", "PlacementRule ml", "not-power,ml,later")},
		},
		"a PodPlacementConfig wins over the rule": {
			images: multi, cluster: scoringCluster, configs: []v1beta1.PodPlacementConfig{amdFirst}, rules: []v1beta1.PlacementRule{mlPrefers},
			want: decided{Outcome: OutcomeArchSet, Required: required("amd64", "arm64", "s390x"), Preferred: []string{"[amd64]/70"},
				Source:      "PodPlacementConfig team/amd-first",
				Skipped:     []string{"PlacementRule ml (HigherPriorityConfig)", "ClusterPodPlacementConfig cluster (HigherPriorityConfig)"},
				Annotations: annotations("amd64,arm64,s390x", "PodPlacementConfig team/amd-first", "ml")},
		},
		"the pod's label wins over the rule": {
			images: multi, label: "s390x", cluster: scoringCluster, rules: []v1beta1.PlacementRule{mlPrefers},
			want: decided{Outcome: OutcomeArchSet, Required: required("amd64", "arm64", "s390x"), Preferred: []string{"[s390x]/100"},
				Source:      "label " + v1beta1.LabelPreferredArchitecture,
				Skipped:     []string{"PlacementRule ml (HigherPriorityConfig)", "ClusterPodPlacementConfig cluster (HigherPriorityConfig)"},
				Annotations: annotations("amd64,arm64,s390x", "label "+v1beta1.LabelPreferredArchitecture, "ml")},
		},
		"a rule whose weights were all narrowed away blocks nothing: the cluster's apply": {
			images: multi, cluster: scoringCluster, rules: []v1beta1.PlacementRule{amdOnly, mlPrefers},
			want: decided{Outcome: OutcomeArchSet, Required: required("amd64"), Preferred: []string{"[amd64]/10"},
				Source: "ClusterPodPlacementConfig cluster", RequiredBy: []string{"amd-only"},
				Annotations: annotations("amd64,arm64,s390x", "ClusterPodPlacementConfig cluster", "amd-only,ml")},
		},
		"where the cluster's preferences do not apply (ClusterStage), the rules still narrow but do not weight": {
			images: multi, rules: []v1beta1.PlacementRule{noAmd, mlPrefers},
			want: decided{Outcome: OutcomeArchSet, Required: required("arm64", "s390x"), RequiredBy: []string{"no-amd"},
				Annotations: annotations("amd64,arm64,s390x", "", "no-amd,ml")},
		},
		"tolerations follow the narrowed architectures": {
			images: multi, taints: []v1beta1.ArchitectureTaint{gkeArm, s390x}, rules: []v1beta1.PlacementRule{noAmd, armOnly},
			want: decided{Outcome: OutcomeArchSet, Required: required("arm64"), RequiredBy: []string{"no-amd", "arm-only"},
				Annotations: annotations("amd64,arm64,s390x", "", "no-amd,arm-only"), Tolerations: []corev1.Toleration{gkeArmTo}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"},
				Spec: corev1.PodSpec{Affinity: tc.affinity.DeepCopy(), NodeSelector: tc.nodeSelector}}
			if tc.label != "" {
				pod.Labels = map[string]string{v1beta1.LabelPreferredArchitecture: tc.label}
			}
			d := Decide(pod, tc.images, tc.configs, tc.cluster, Constraints{Taints: tc.taints, Rules: tc.rules})
			if diff := cmp.Diff(tc.want, decidedOf(pod, d)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
