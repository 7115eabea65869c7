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

package webhook

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestNeedsLocalGate(t *testing.T) {
	on := &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true,
		Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 10}}}}
	selecting := func(app string) v1beta1.PodPlacementConfig {
		return v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: app},
			Spec: v1beta1.PodPlacementConfigSpec{Plugins: on, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
	configs := []v1beta1.PodPlacementConfig{selecting("web")}
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "web"}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"selected by a configuration", pod(nil), true},
		{"selected by none", pod(func(p *corev1.Pod) { p.Labels["app"] = "db" }), false},
		{"already locally gated", pod(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.LocalSchedulingGateName}}
		}), false},
		{"cluster gate only: still gated locally", pod(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}}
		}), true},
		{"placed at admission with the configurations already", pod(func(p *corev1.Pod) {
			p.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueAdmission
		}), false},
		{"nodeName set", pod(func(p *corev1.Pod) { p.Spec.NodeName = "n" }), false},
		{"nodeSelector pins the architecture", pod(func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1beta1.NodeArchLabel: "arm64"}
		}), false},
		{"DaemonSet pod", pod(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d"}}
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsLocalGate(tc.pod, configs); got != tc.want {
				t.Errorf("NeedsLocalGate = %v, want %v", got, tc.want)
			}
		})
	}
}
