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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func TestSelectConfigs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-1", Labels: map[string]string{"app": "web"}}}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	db := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	invalid := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}

	tests := map[string]struct {
		configs   []v1beta1.PodPlacementConfig
		wantNames []string
		wantErr   string
	}{
		"none": {},
		"label selector does not match": {
			configs: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "db").WithPriority(1).WithLabelSelector(db).Build()},
		},
		"unset and empty selectors match every pod": {
			configs:   []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "unset").WithPriority(1).Build(), *objects.PodPlacementConfig("team", "empty").WithPriority(2).WithLabelSelector(&metav1.LabelSelector{}).Build()},
			wantNames: []string{"empty", "unset"},
		},
		"other namespaces are ignored": {
			configs: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("other", "web").WithPriority(1).WithLabelSelector(web).Build()},
		},
		"descending priority, ties by name": {
			configs: []v1beta1.PodPlacementConfig{
				*objects.PodPlacementConfig("team", "b").WithPriority(10).WithLabelSelector(web).Build(), *objects.PodPlacementConfig("team", "z").Build(), *objects.PodPlacementConfig("team", "a").WithPriority(10).WithLabelSelector(web).Build(),
				*objects.PodPlacementConfig("team", "top").WithPriority(255).WithLabelSelector(web).Build(), *objects.PodPlacementConfig("team", "skip").WithPriority(200).WithLabelSelector(db).Build(),
			},
			wantNames: []string{"top", "a", "b", "z"},
		},
		"invalid selector is reported and left out": {
			configs:   []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "bad").WithPriority(9).WithLabelSelector(invalid).Build(), *objects.PodPlacementConfig("team", "good").WithPriority(1).WithLabelSelector(web).Build()},
			wantNames: []string{"good"},
			wantErr:   "PodPlacementConfig team/bad: invalid labelSelector",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := SelectConfigs(pod, tc.configs)
			var gotNames []string
			for _, c := range got {
				gotNames = append(gotNames, c.Name)
			}
			if diff := cmp.Diff(tc.wantNames, gotNames); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestScoringSources(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-1", Labels: map[string]string{"app": "web"}}}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	armFirst := platforms("arm64", 75, "amd64", 25)
	amdOnly := platforms("amd64", 50)
	clusterWith := func(plugins *v1beta1.Plugins) *v1beta1.ClusterPodPlacementConfig {
		return &v1beta1.ClusterPodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
			Spec:       v1beta1.ClusterPodPlacementConfigSpec{Plugins: plugins},
		}
	}
	clusterRef := SourceRef{Kind: KindClusterPodPlacementConfig, Name: v1beta1.SingletonName}

	labelRef := SourceRef{Kind: KindPodLabel, Name: v1beta1.LabelPreferredArchitecture}
	ruleRef := func(name string) SourceRef { return SourceRef{Kind: KindPlacementRule, Name: name} }
	requiredOnly := v1beta1.PlacementRule{Name: "batch", RequiredArchitectures: []string{"amd64"}}
	mlRule := v1beta1.PlacementRule{Name: "ml", PreferredArchitectures: platforms("arm64", 60)}
	laterRule := v1beta1.PlacementRule{Name: "later", PreferredArchitectures: amdOnly}
	tests := map[string]struct {
		label       string // the pod's preferred-architecture label, none when empty
		configs     []v1beta1.PodPlacementConfig
		rules       []v1beta1.PlacementRule // the matched placement rules
		cluster     *v1beta1.ClusterPodPlacementConfig
		wantSources []ScoringSource
	}{
		"the first matched rule with preferences, after the configurations, before the cluster": {
			label:   "s390x",
			configs: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "high").WithPriority(100).WithLabelSelector(web).WithPlugins(scoring(true, armFirst)).Build()},
			rules:   []v1beta1.PlacementRule{requiredOnly, mlRule, laterRule},
			cluster: clusterWith(scoring(true, amdOnly)),
			wantSources: []ScoringSource{
				{Ref: labelRef, Platforms: platforms("s390x", 100)},
				{Ref: SourceRef{Kind: KindPodPlacementConfig, Namespace: "team", Name: "high"}, Platforms: armFirst},
				{Ref: ruleRef("ml"), Platforms: mlRule.PreferredArchitectures},
				{Ref: clusterRef, Platforms: amdOnly},
			},
		},
		"a rule's preference needs no nodeAffinityScoring": {
			rules: []v1beta1.PlacementRule{mlRule}, cluster: clusterWith(nil),
			wantSources: []ScoringSource{{Ref: ruleRef("ml"), Platforms: mlRule.PreferredArchitectures}},
		},
		"rules without preferences add no source": {
			rules: []v1beta1.PlacementRule{requiredOnly}, cluster: clusterWith(scoring(true, amdOnly)),
			wantSources: []ScoringSource{{Ref: clusterRef, Platforms: amdOnly}},
		},
		"the rules are the cluster's: left out with it": {
			rules: []v1beta1.PlacementRule{mlRule},
		},
		"no configuration": {},
		"the preferred-architecture label comes first, at the highest weight": {
			label:   "s390x",
			configs: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "high").WithPriority(100).WithLabelSelector(web).WithPlugins(scoring(true, armFirst)).Build()},
			cluster: clusterWith(scoring(true, amdOnly)),
			wantSources: []ScoringSource{
				{Ref: labelRef, Platforms: platforms("s390x", 100)},
				{Ref: SourceRef{Kind: KindPodPlacementConfig, Namespace: "team", Name: "high"}, Platforms: armFirst},
				{Ref: clusterRef, Platforms: amdOnly},
			},
		},
		"the label needs no enabled plugin": {
			label: "arm64", cluster: clusterWith(nil),
			wantSources: []ScoringSource{{Ref: labelRef, Platforms: platforms("arm64", 100)}},
		},
		"cluster config only": {
			cluster:     clusterWith(scoring(true, amdOnly)),
			wantSources: []ScoringSource{{Ref: clusterRef, Platforms: amdOnly}},
		},
		"cluster config without plugins": {
			cluster: clusterWith(nil),
		},
		"disabled plugins are ignored": {
			configs: []v1beta1.PodPlacementConfig{
				*objects.PodPlacementConfig("team", "off").WithPriority(9).WithLabelSelector(web).WithPlugins(scoring(false, armFirst)).Build(),
				*objects.PodPlacementConfig("team", "none").WithPriority(8).WithLabelSelector(web).Build(),
				*objects.PodPlacementConfig("team", "unset").WithPriority(7).WithLabelSelector(web).WithPlugins(&v1beta1.Plugins{}).Build(),
			},
			cluster: clusterWith(scoring(false, amdOnly)),
		},
		"pod placement configs by priority, then the cluster": {
			configs: []v1beta1.PodPlacementConfig{
				*objects.PodPlacementConfig("team", "low").WithPriority(1).WithLabelSelector(web).WithPlugins(scoring(true, amdOnly)).Build(),
				*objects.PodPlacementConfig("team", "high").WithPriority(100).WithLabelSelector(web).WithPlugins(scoring(true, armFirst)).Build(),
				*objects.PodPlacementConfig("team", "no-match").WithPriority(200).WithLabelSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}).WithPlugins(scoring(true, armFirst)).Build(),
			},
			cluster: clusterWith(scoring(true, amdOnly)),
			wantSources: []ScoringSource{
				{Ref: SourceRef{Kind: KindPodPlacementConfig, Namespace: "team", Name: "high"}, Platforms: armFirst},
				{Ref: SourceRef{Kind: KindPodPlacementConfig, Namespace: "team", Name: "low"}, Platforms: amdOnly},
				{Ref: clusterRef, Platforms: amdOnly},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := pod.DeepCopy()
			if tc.label != "" {
				pod.Labels[v1beta1.LabelPreferredArchitecture] = tc.label
			}
			got, err := ScoringSources(pod, tc.configs, tc.rules, tc.cluster)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.wantSources, got); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

// TestControllerFlow runs the rules in the order the pod placement controller applies them, on the
// seed's PodPlacementConfig example plus a ClusterPodPlacementConfig.
func TestControllerFlow(t *testing.T) {
	configs := []v1beta1.PodPlacementConfig{
		*objects.PodPlacementConfig("my-namespace", "my-namespace-config").WithPriority(100).WithLabelSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"fast-on-arm"}},
		}}).WithPlugins(scoring(true, platforms("amd64", 25, "arm64", 75))).Build(),
	}
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec:       v1beta1.ClusterPodPlacementConfigSpec{Plugins: scoring(true, platforms("arm64", 10, "s390x", 10, "ppc64le", 10))},
	}
	compatible := sets.New("amd64", "arm64", "ppc64le")
	ppcRef := SourceRef{Kind: KindPodPlacementConfig, Namespace: "my-namespace", Name: "my-namespace-config"}
	clusterRef := SourceRef{Kind: KindClusterPodPlacementConfig, Name: v1beta1.SingletonName}
	userPreferred := preferred(1, archIn("amd64"))
	wantRequired := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		term(zoneIn("a"), archIn("amd64", "arm64", "ppc64le")),
	}}

	tests := map[string]struct {
		userPreferred []corev1.PreferredSchedulingTerm
		wantPreferred []corev1.PreferredSchedulingTerm
		wantSkipped   []SkippedSource
		wantConflicts []SkippedSource
	}{
		"the pod placement config wins over the cluster config": {
			wantPreferred: []corev1.PreferredSchedulingTerm{preferred(25, archIn("amd64")), preferred(75, archIn("arm64"))},
			// Precedence is documented behaviour: reported, but not an Event-worthy conflict.
			wantSkipped: []SkippedSource{{Source: clusterRef, Reason: SkipHigherPriority, By: ppcRef}},
		},
		"the user's own arch preference wins over both": {
			userPreferred: []corev1.PreferredSchedulingTerm{userPreferred},
			wantPreferred: []corev1.PreferredSchedulingTerm{userPreferred},
			wantSkipped: []SkippedSource{
				{Source: ppcRef, Reason: SkipPodPreference},
				{Source: clusterRef, Reason: SkipPodPreference},
			},
			wantConflicts: []SkippedSource{
				{Source: ppcRef, Reason: SkipPodPreference},
				{Source: clusterRef, Reason: SkipPodPreference},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "my-namespace", Name: "app-1", Labels: map[string]string{"app": "fast-on-arm"}},
				Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(zoneIn("a"))}},
					PreferredDuringSchedulingIgnoredDuringExecution: tc.userPreferred,
				}}},
			}
			sources, err := ScoringSources(pod, configs, nil, cluster)
			if err != nil {
				t.Fatal(err)
			}
			spec := pod.Spec
			if got := MergeRequiredArchitectures(&spec, compatible); got != OutcomeArchSet {
				t.Fatalf("outcome = %q, want %q", got, OutcomeArchSet)
			}
			result := MergePreferredArchitectures(&spec, compatible, sources)

			wantAffinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  wantRequired,
				PreferredDuringSchedulingIgnoredDuringExecution: tc.wantPreferred,
			}}
			if diff := cmp.Diff(wantAffinity, spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, result.SkippedSources); diff != "" {
				t.Errorf("skipped sources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantConflicts, result.Conflicts()); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}
