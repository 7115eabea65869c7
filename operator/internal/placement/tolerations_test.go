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
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

var (
	gkeArm   = v1beta1.ArchitectureTaint{Architecture: "arm64"}
	gkeArmTo = corev1.Toleration{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}
	s390x    = v1beta1.ArchitectureTaint{Architecture: "s390x", Key: "example.com/mainframe", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	s390xTo  = corev1.Toleration{Key: "example.com/mainframe", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoExecute}
)

func TestAddArchitectureTolerations(t *testing.T) {
	tests := map[string]struct {
		archs  []string
		taints []v1beta1.ArchitectureTaint
		own    []corev1.Toleration
		want   []corev1.Toleration // the pod's tolerations after
		added  int
	}{
		"no taints configured: nothing": {archs: []string{"amd64", "arm64"}},
		"tainted architecture in the set: GKE's defaults": {
			archs: []string{"amd64", "arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			want: []corev1.Toleration{gkeArmTo}, added: 1,
		},
		"tainted architecture not in the set: nothing": {
			archs: []string{"amd64"}, taints: []v1beta1.ArchitectureTaint{gkeArm, s390x},
		},
		"every tainted architecture of the set, in the configured order": {
			archs: []string{"arm64", "s390x"}, taints: []v1beta1.ArchitectureTaint{s390x, gkeArm},
			want: []corev1.Toleration{s390xTo, gkeArmTo}, added: 2,
		},
		"the pod's own tolerations are kept first": {
			archs: []string{"arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			own:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
			want: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}, gkeArmTo}, added: 1,
		},
		"already tolerated exactly: nothing": {
			archs: []string{"arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			own: []corev1.Toleration{gkeArmTo}, want: []corev1.Toleration{gkeArmTo},
		},
		"tolerated by Exists on the key: nothing": {
			archs: []string{"arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			own:  []corev1.Toleration{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpExists}},
			want: []corev1.Toleration{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpExists}},
		},
		"tolerated by an empty key (everything): nothing": {
			archs: []string{"arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			own: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, want: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		"a toleration for another effect does not count": {
			archs: []string{"arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			own: []corev1.Toleration{{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectPreferNoSchedule}},
			want: []corev1.Toleration{
				{Key: v1beta1.NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectPreferNoSchedule}, gkeArmTo,
			},
			added: 1,
		},
		"a toleration for another value does not count": {
			archs: []string{"arm64"}, taints: []v1beta1.ArchitectureTaint{gkeArm},
			own:  []corev1.Toleration{{Key: v1beta1.NodeArchLabel, Value: "amd64"}},
			want: []corev1.Toleration{{Key: v1beta1.NodeArchLabel, Value: "amd64"}, gkeArmTo}, added: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			own := append([]corev1.Toleration(nil), tc.own...)
			spec := &corev1.PodSpec{Tolerations: own}
			added := AddArchitectureTolerations(spec, sets.New(tc.archs...), tc.taints)
			if diff := cmp.Diff(tc.want, spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if len(added) != tc.added {
				t.Errorf("added %v, want %d", added, tc.added)
			}
			if diff := cmp.Diff(tc.own, own); diff != "" {
				t.Errorf("the pod's original slice was written (-before +after):\n%s", diff)
			}
		})
	}
}

// TestDecideTolerations: Decide adds the taints' tolerations for the architectures it placed the
// pod on, also when the images run anywhere, and never for a pod whose user pinned the
// architecture or whose images share none.
func TestDecideTolerations(t *testing.T) {
	taints := []v1beta1.ArchitectureTaint{gkeArm}
	tests := map[string]struct {
		images       []ImageArchitectures
		nodeSelector map[string]string
		want         []corev1.Toleration
	}{
		"placed on a set with arm64":                           {images: []ImageArchitectures{archsResult("amd64", "arm64")}, want: []corev1.Toleration{gkeArmTo}},
		"placed on amd64 only":                                 {images: []ImageArchitectures{archsResult("amd64")}},
		"images without binaries run anywhere, arm64 included": {images: []ImageArchitectures{{AnyArchitecture: true}}, want: []corev1.Toleration{gkeArmTo}},
		"user pinned arm64: the user's tolerations are the user's": {
			images: []ImageArchitectures{archsResult("amd64", "arm64")}, nodeSelector: map[string]string{v1beta1.NodeArchLabel: "arm64"},
		},
		"no common architecture": {images: []ImageArchitectures{archsResult("arm64"), archsResult("amd64")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"}, Spec: corev1.PodSpec{NodeSelector: tc.nodeSelector}}
			d := Decide(pod, tc.images, nil, nil, Constraints{Taints: taints})
			if diff := cmp.Diff(tc.want, pod.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, d.Tolerations); diff != "" {
				t.Errorf("Decision.Tolerations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	taints := []v1beta1.ArchitectureTaint{gkeArm}
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	arm := corev1.NodeSelectorRequirement{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}
	amd := corev1.NodeSelectorRequirement{Key: v1beta1.NodeArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}
	required := func(reqs ...corev1.NodeSelectorRequirement) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
		}}}
	}
	tests := map[string]struct {
		arch            string
		affinity        *corev1.Affinity
		nodeSelector    map[string]string
		want            *corev1.Affinity
		wantTolerations []corev1.Toleration
		wantOK          bool
	}{
		"no constraint: the fallback is required": {arch: "amd64", want: required(amd), wantOK: true},
		"a tainted fallback comes with its toleration": {
			arch: "arm64", want: required(arm), wantTolerations: []corev1.Toleration{gkeArmTo}, wantOK: true,
		},
		"the user's terms are extended": {arch: "amd64", affinity: required(zone), want: required(zone, amd), wantOK: true},
		"the user pinned the architecture: untouched": {
			arch: "arm64", affinity: required(amd), want: required(amd),
		},
		"the user pinned by nodeSelector: untouched": {
			arch: "arm64", nodeSelector: map[string]string{v1beta1.NodeArchLabel: "amd64"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.PodSpec{Affinity: tc.affinity.DeepCopy(), NodeSelector: tc.nodeSelector}
			tolerations, ok := Fallback(spec, tc.arch, taints)
			if ok != tc.wantOK {
				t.Errorf("ok = %t, want %t", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTolerations, spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTolerations, tolerations); diff != "" {
				t.Errorf("returned tolerations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecidePreferredLabel: the pod's preferred-architecture label wins over the configurations
// when every image supports the architecture, and is ignored (the next source applies) otherwise.
func TestDecidePreferredLabel(t *testing.T) {
	cluster := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec:       v1beta1.ClusterPodPlacementConfigSpec{Plugins: scoring(true, platforms("amd64", 30))},
	}
	tests := map[string]struct {
		label, wantSource string
		wantApplied       []string
	}{
		"supported: the label's architecture at weight 100": {
			label: "arm64", wantSource: "label " + v1beta1.LabelPreferredArchitecture, wantApplied: []string{"arm64/100"},
		},
		"not supported by every image: ignored, the cluster's weights apply": {
			label: "s390x", wantSource: "ClusterPodPlacementConfig cluster", wantApplied: []string{"amd64/30"},
		},
		"not an architecture: ignored": {
			label: "arm", wantSource: "ClusterPodPlacementConfig cluster", wantApplied: []string{"amd64/30"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team",
				Labels: map[string]string{v1beta1.LabelPreferredArchitecture: tc.label}}}
			d := Decide(pod, []ImageArchitectures{archsResult("amd64", "arm64")}, nil, cluster, Constraints{})
			var applied []string
			for _, p := range d.Preferred.Applied {
				applied = append(applied, fmt.Sprintf("%s/%d", p.Architecture, p.Weight))
			}
			if d.PreferenceSource != tc.wantSource || !cmp.Equal(applied, tc.wantApplied) {
				t.Errorf("source %q, applied %v; want %q, %v", d.PreferenceSource, applied, tc.wantSource, tc.wantApplied)
			}
		})
	}
}
