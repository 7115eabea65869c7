//go:build integration

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

package admissionpolicy_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/knownimages"
	"github.com/archgate/archgate/operator/pkg/testing/imagerewriter"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// TestPolicyPlacementAfterImageRewrite: a webhook that the apiserver calls after the policy
// rewrites the image of a pod the policy placed. The apiserver applies the policy again, which
// takes off exactly what it added (nothing of the user's) and gates the pod, as it gates a pod
// whose images it does not know: the controller decides on the images the pod now runs. A pod
// whose images did not change keeps its placement.
func TestPolicyPlacementAfterImageRewrite(t *testing.T) {
	imagerewriter.Start(t, imagerewriter.Options{CertDir: servingCertDir, CABundle: servingCA, Client: k8s})
	const rewriting, plain = "rewriting", "not-rewriting"
	ensureNamespaceWith(t, rewriting, map[string]string{imagerewriter.NamespaceLabel: "on"})
	ensureNamespace(t, plain)
	// Taints and weights, so that the policy adds tolerations, required and preferred terms.
	// A weight of its own tells this test's policy from an earlier test's.
	cluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: v1beta1.ClusterPodPlacementConfigSpec{
		ArchitectureTaints: []v1beta1.ArchitectureTaint{{Architecture: "arm64"}},
		Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 33}},
		}},
	}}
	nginx, busybox, unknown := published[0].Ref, published[1].Ref, unpublished[0]
	newPod := func(ns, image string, spec func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
		if spec != nil {
			spec(&p.Spec)
		}
		return p
	}
	installPolicy(t, cluster, knownimages.ImageParameters(published), newPod(plain, nginx, nil), func(p *corev1.Pod) bool {
		na := p.Spec.Affinity
		return p.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission && na != nil && na.NodeAffinity != nil &&
			len(na.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 1 &&
			na.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight == 33
	})
	userConstraints := func(s *corev1.PodSpec) {
		s.Affinity = objects.RequiredAffinity([]corev1.NodeSelectorRequirement{{
			Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}})
		s.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{Weight: 3,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}
		s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	}
	withPodAntiAffinity := func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}}
	}
	for name, tc := range map[string]struct {
		spec     func(*corev1.PodSpec)
		to       string // the image the rewriter writes; "" rewrites nothing
		wantGate bool
	}{
		"rewritten to another published image":                         {to: busybox, wantGate: true},
		"rewritten to an image never published":                        {to: unknown, wantGate: true},
		"the user's own terms, preferences and tolerations are kept":   {spec: userConstraints, to: busybox, wantGate: true},
		"an affinity of the user's without node affinity is kept":      {spec: withPodAntiAffinity, to: busybox, wantGate: true},
		"not rewritten: placed as in a namespace without the rewriter": {spec: userConstraints},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPod(rewriting, nginx, tc.spec)
			p.Annotations = map[string]string{imagerewriter.Annotation: nginx + "=" + tc.to}
			if tc.to == "" {
				p.Annotations[imagerewriter.Annotation] = "not-in-the-pod=" + busybox
			}
			got := admit(t, p)
			wantImage := nginx
			if tc.to != "" {
				wantImage = tc.to
			}
			if image := got.Spec.Containers[0].Image; image != wantImage {
				t.Fatalf("image %s, want %s: the rewriter did not run as asked", image, wantImage)
			}
			// What the policy admits, in a namespace without the rewriter: for the image the pod now
			// runs when the pod is to be gated (an unpublished image, so that the policy gates it), for the
			// image it runs otherwise.
			expected := p.DeepCopy()
			expected.Namespace = plain
			if tc.wantGate {
				expected.Spec.Containers[0].Image = unknown
			}
			want := admit(t, expected)
			if tc.wantGate && !v1beta1.HasSchedulingGate(&want.Spec) {
				t.Fatalf("the pod to compare with is not gated: %v", want.Labels)
			}
			if w, g := placementOf(want), placementOf(got); w != g {
				t.Errorf("pod:\n%s\nwant:\n%s\ngot:\n%s", toYAML(p), w, g)
			}
		})
	}
}
