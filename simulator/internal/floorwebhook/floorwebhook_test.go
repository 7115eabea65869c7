package floorwebhook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPatch(t *testing.T) {
	arm := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}}}}
	label := jsonpatch.NewOperation("add", "/metadata/labels/sim.archgate.io~1floor-webhook", LabelValue)
	tests := map[string]struct {
		pod      *corev1.Pod
		affinity *corev1.Affinity
		want     []jsonpatch.JsonPatchOperation
	}{
		"labelled pod, affinity added": {
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}},
			affinity: arm,
			want:     []jsonpatch.JsonPatchOperation{label, jsonpatch.NewOperation("add", "/spec/affinity", arm)},
		},
		"pod without labels gets the label map": {
			pod:  &corev1.Pod{},
			want: []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{Label: LabelValue})},
		},
		"no answer: label only": {
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}},
			want: []jsonpatch.JsonPatchOperation{label},
		},
		"the pod's own affinity is kept": {
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
				Spec: corev1.PodSpec{Affinity: &corev1.Affinity{}}},
			affinity: arm,
			want:     []jsonpatch.JsonPatchOperation{label},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Patch(tc.pod, tc.affinity)
			// Compare as the apiserver receives them.
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if diff := cmp.Diff(string(w), string(g)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
