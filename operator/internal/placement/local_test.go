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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func localPod(labels, annotations map[string]string, gates ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: labels, Annotations: annotations}}
	for _, g := range gates {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return pod
}

func TestClusterStage(t *testing.T) {
	configs := []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("ns", "a").WithPriority(1).WithPlugins(scoring(true, platforms("arm64", 50))).Build()}
	withScoring := &v1beta1.ClusterPodPlacementConfig{Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: scoring(true, platforms("amd64", 10))}}
	noScoring := &v1beta1.ClusterPodPlacementConfig{}
	rulePrefers := &v1beta1.ClusterPodPlacementConfig{Spec: v1beta1.ClusterPodPlacementConfigSpec{PlacementRules: []v1beta1.PlacementRule{
		{Name: "batch", RequiredArchitectures: []string{"amd64"}}, {Name: "ml", PreferredArchitectures: platforms("arm64", 60)},
	}}}
	ruleRequires := &v1beta1.ClusterPodPlacementConfig{Spec: v1beta1.ClusterPodPlacementConfigSpec{PlacementRules: []v1beta1.PlacementRule{
		{Name: "batch", RequiredArchitectures: []string{"amd64"}},
	}}}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		cluster     *v1beta1.ClusterPodPlacementConfig
		wantConfigs bool
		wantCluster bool
		wantWait    bool
	}{
		{name: "no local placement: everything, as before", pod: localPod(nil, nil, v1beta1.SchedulingGateName),
			cluster: withScoring, wantConfigs: true, wantCluster: true},
		{name: "local gate on, cluster preferences on: wait for the local decision",
			pod: localPod(nil, nil, v1beta1.LocalSchedulingGateName), cluster: withScoring, wantWait: true},
		{name: "local gate on, no cluster preferences: required affinity only",
			pod: localPod(nil, nil, v1beta1.LocalSchedulingGateName), cluster: noScoring, wantCluster: false},
		{name: "local gate on, a placement rule with preferences: wait, as for the cluster's scoring",
			pod: localPod(nil, nil, v1beta1.LocalSchedulingGateName), cluster: rulePrefers, wantWait: true},
		{name: "local gate on, placement rules that only require: required affinity only",
			pod: localPod(nil, nil, v1beta1.LocalSchedulingGateName), cluster: ruleRequires},
		{name: "local stage applied a configuration: no more preferences",
			pod: localPod(map[string]string{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueRemoved},
				map[string]string{v1beta1.AnnotationPreferredAffinitySource: "PodPlacementConfig ns/a"}),
			cluster: withScoring},
		{name: "local stage applied none: the cluster preferences",
			pod:     localPod(map[string]string{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueRemoved}, nil),
			cluster: withScoring, wantCluster: true},
		{name: "local gate released unprocessed: the cluster-wide stage applies the configurations",
			pod:     localPod(map[string]string{v1beta1.LabelLocalSchedulingGate: v1beta1.LabelValueReleased}, nil),
			cluster: withScoring, wantConfigs: true, wantCluster: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotConfigs, gotCluster, wait := ClusterStage(tc.pod, configs, tc.cluster)
			if (len(gotConfigs) > 0) != tc.wantConfigs || (gotCluster != nil) != tc.wantCluster || wait != tc.wantWait {
				t.Errorf("ClusterStage = configs %d, cluster %v, wait %v; want configs %v, cluster %v, wait %v",
					len(gotConfigs), gotCluster != nil, wait, tc.wantConfigs, tc.wantCluster, tc.wantWait)
			}
		})
	}
}

func TestDecideLocal(t *testing.T) {
	high := *objects.PodPlacementConfig("ns", "high").WithPriority(200).WithPlugins(scoring(true, platforms("arm64", 80, "amd64", 20))).Build()
	low := *objects.PodPlacementConfig("ns", "low").WithPriority(10).WithPlugins(scoring(true, platforms("amd64", 90))).Build()
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		configs     []v1beta1.PodPlacementConfig
		wantSource  string
		wantWeights []int32
	}{
		{name: "highest priority first", pod: localPod(nil, nil), configs: []v1beta1.PodPlacementConfig{low, high},
			wantSource: "PodPlacementConfig ns/high", wantWeights: []int32{80, 20}},
		{name: "weights limited to the architectures recorded at admission",
			pod:     localPod(nil, map[string]string{v1beta1.AnnotationArchitectures: "amd64,s390x"}),
			configs: []v1beta1.PodPlacementConfig{low, high}, wantSource: "PodPlacementConfig ns/high", wantWeights: []int32{20}},
		{name: "no configuration enabled: nothing", pod: localPod(nil, nil),
			configs: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("ns", "off").WithPriority(1).WithPlugins(scoring(false, platforms("arm64", 1))).Build()}},
		{name: "the pod's own preference wins", configs: []v1beta1.PodPlacementConfig{high},
			pod: func() *corev1.Pod {
				p := localPod(nil, nil)
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{preferred(5, archIn("s390x"))}}}
				return p
			}(), wantWeights: []int32{5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideLocal(tc.pod, tc.configs)
			if d.PreferenceSource != tc.wantSource {
				t.Errorf("source = %q, want %q", d.PreferenceSource, tc.wantSource)
			}
			var weights []int32
			if a := tc.pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
				for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					weights = append(weights, p.Weight)
				}
			}
			if len(weights) != len(tc.wantWeights) {
				t.Fatalf("weights = %v, want %v", weights, tc.wantWeights)
			}
			for i := range weights {
				if weights[i] != tc.wantWeights[i] {
					t.Errorf("weights = %v, want %v", weights, tc.wantWeights)
				}
			}
			if a := tc.pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				t.Errorf("the local stage set a required affinity: %v", a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			}
		})
	}
}
