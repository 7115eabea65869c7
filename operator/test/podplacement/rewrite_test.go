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
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// The image rewriter stands for a mirror rewriter or a policy engine that rewrites images: a
// mutating webhook the apiserver calls after archgate's (configurations are called in the order
// of their names).
const (
	rewriterName       = "zz-image-rewriter"
	rewriterPath       = "/rewrite-images"
	rewriteImagesLabel = "archgate-test/rewrite-images"
	// rewriteAnnotation asks the rewriter to replace one image: "<from>=<to>".
	rewriteAnnotation = "archgate-test/rewrite-image"
)

// TestAdmissionPlacementAfterImageRewrite: a webhook that runs after archgate's rewrites the
// image of a pod archgate placed at admission. The apiserver calls archgate's webhook again, which
// places the pod for the image it now runs, exactly as a pod created with that image; or gates it
// when that image is not published yet, and the controller places it.
func TestAdmissionPlacementAfterImageRewrite(t *testing.T) {
	startController(t)
	startImageRewriter(t)
	ns := newNamespace(t)
	labelNamespace(t, ns)
	labelNamespaceWith(t, ns, rewriteImagesLabel, "on")
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
	rewritten.Annotations = map[string]string{rewriteAnnotation: multi + "=" + arm}
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
	unpublished.Annotations = map[string]string{rewriteAnnotation: multi + "=" + amd}
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

// startImageRewriter serves the image rewriter for the namespaces labelled rewriteImagesLabel
// until the test ends.
func startImageRewriter(t *testing.T) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: s.servingCertDir})
	srv.Register(rewriterPath, &admission.Webhook{Handler: admission.HandlerFunc(rewriteImage)})
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("image rewriter: %v", err)
		}
	})
	eventually(t, "the image rewriter serving", func(context.Context) (bool, error) {
		return srv.StartedChecker()(nil) == nil, nil
	})
	url := "https://127.0.0.1:" + strconv.Itoa(port) + rewriterPath
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: rewriterName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "rewrite-images.archgate-test.example",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.servingCA},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{rewriteImagesLabel: "on"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := s.client.Create(s.ctx, mwc); err != nil {
		t.Fatalf("registering the image rewriter: %v", err)
	}
	t.Cleanup(func() {
		if err := s.client.Delete(context.Background(), mwc); err != nil {
			t.Errorf("removing the image rewriter: %v", err)
		}
	})
}

// rewriteImage replaces the image the pod's rewriteAnnotation names.
func rewriteImage(_ context.Context, req admission.Request) admission.Response {
	var p corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	from, to, ok := strings.Cut(p.Annotations[rewriteAnnotation], "=")
	if !ok {
		return admission.Allowed("")
	}
	var ops []jsonpatch.JsonPatchOperation
	for i, c := range p.Spec.Containers {
		if c.Image == from {
			ops = append(ops, jsonpatch.NewOperation("replace", fmt.Sprintf("/spec/containers/%d/image", i), to))
		}
	}
	return admission.Patched("", ops...)
}
