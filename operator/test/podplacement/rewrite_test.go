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

package podplacement

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/imagerewriter"
)

// TestAdmissionPlacementAfterImageRewrite: a webhook that runs after archgate's rewrites the
// image of a pod archgate placed at admission. The apiserver calls archgate's webhook again, which
// places the pod for the image it now runs, exactly as a pod created with that image; or gates it
// when that image is not published yet, and the controller places it.
func TestAdmissionPlacementAfterImageRewrite(t *testing.T) {
	startController(t)
	imagerewriter.Start(t, imagerewriter.Options{CertDir: s.servingCertDir, CABundle: s.servingCA, Client: s.client})
	ns := newNamespace(t)
	labelNamespace(t, ns)
	labelNamespaceWith(t, ns, imagerewriter.NamespaceLabel, "on")
	multi := s.main.Reference("library/multi", "latest")  // four architectures
	arm := s.main.Reference("team/api", "v1")             // arm64 only
	amd := s.main.Reference("legacy/rewrite-target", "1") // amd64 only, never published before

	// Other tests of the suite may have published the first two images already.
	for i, image := range []string{multi, arm} {
		publish := pod(ns, "publish-"+strconv.Itoa(i), image)
		if err := s.client.Create(s.ctx, publish); err != nil {
			t.Fatal(err)
		}
		if gated(publish) {
			waitUngated(t, publish)
		}
		eventually(t, "the webhook placing "+image+" at admission", func(ctx context.Context) (bool, error) {
			probe := pod(ns, "probe", image)
			if err := s.client.Create(ctx, probe, client.DryRunAll); err != nil {
				return false, err
			}
			return probe.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission, nil
		})
	}

	direct := create(t, pod(ns, "direct", arm), false)
	rewritten := pod(ns, "rewritten", multi)
	rewritten.Annotations = map[string]string{imagerewriter.Annotation: multi + "=" + arm}
	create(t, rewritten, false)
	if got := rewritten.Spec.Containers[0].Image; got != arm {
		t.Fatalf("the rewriter did not run: image %s, want %s", got, arm)
	}
	if rewritten.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueAdmission {
		t.Fatalf("rewritten pod: labels %v, want placed at admission", rewritten.Labels)
	}
	if diff := cmp.Diff(direct.Spec.Affinity, rewritten.Spec.Affinity); diff != "" {
		t.Errorf("the rewritten pod is placed for an image it no longer runs (-created with %s +rewritten to it):\n%s", arm, diff)
	}
	for _, a := range []string{v1beta1.AnnotationArchitectures, v1beta1.AnnotationAdmissionPlacement} {
		if direct.Annotations[a] != rewritten.Annotations[a] {
			t.Errorf("annotation %s: created with the image %q, rewritten to it %q", a, direct.Annotations[a], rewritten.Annotations[a])
		}
	}

	unpublished := pod(ns, "rewritten-unpublished", multi)
	unpublished.Annotations = map[string]string{imagerewriter.Annotation: multi + "=" + amd}
	placed := waitUngated(t, create(t, unpublished, true))
	if got, want := requiredArchitectures(placed), []string{v1beta1.ArchitectureAMD64}; !cmp.Equal(got, want) {
		t.Errorf("pod rewritten to an unpublished image: required architectures %v, want %v (the controller's, for %s)", got, want, amd)
	}
}

// requiredArchitectures returns the values of the kubernetes.io/arch requirements of the pod's
// required node affinity, term after term.
func requiredArchitectures(p *corev1.Pod) []string {
	var out []string
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == v1beta1.NodeArchLabel {
				out = append(out, e.Values...)
			}
		}
	}
	return out
}
