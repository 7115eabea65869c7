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

package affinity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestAddPreferences(t *testing.T) {
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled:   true,
			Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 40}, {Architecture: "amd64", Weight: 10}},
		}}},
	}
	prefer := func(weight int32, arch string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
		}}}
	}
	for _, tc := range []struct {
		name       string
		compatible []string
		own        []corev1.PreferredSchedulingTerm
		cluster    *v1beta1.ClusterPodPlacementConfig
		want       []corev1.PreferredSchedulingTerm
	}{
		{name: "both architectures", compatible: []string{"amd64", "arm64"}, cluster: cluster, want: []corev1.PreferredSchedulingTerm{prefer(40, "arm64"), prefer(10, "amd64")}},
		{name: "only the compatible one", compatible: []string{"amd64", "s390x"}, cluster: cluster, want: []corev1.PreferredSchedulingTerm{prefer(10, "amd64")}},
		{name: "no common architecture", cluster: cluster},
		{name: "the pod's own preference wins", compatible: []string{"arm64"}, own: []corev1.PreferredSchedulingTerm{prefer(5, "amd64")}, cluster: cluster,
			want: []corev1.PreferredSchedulingTerm{prefer(5, "amd64")}},
		{name: "no scoring", compatible: []string{"arm64"}, cluster: &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			if tc.own != nil {
				pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: tc.own}}
			}
			if err := AddPreferences(pod, tc.compatible, tc.cluster); err != nil {
				t.Fatal(err)
			}
			var got []corev1.PreferredSchedulingTerm
			if pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil {
				got = pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("preferred terms (-want +got):\n%s", diff)
			}
		})
	}
}
