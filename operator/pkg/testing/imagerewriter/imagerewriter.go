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

// Package imagerewriter serves a mutating webhook that rewrites the images of pods, as a mirror
// rewriter or a policy engine does. The apiserver calls it after archgate's webhook and
// admission policy (webhooks are called after every policy, and in the order of their
// configurations' names), so tests can show what archgate does with a pod changed after it
// placed it.
package imagerewriter

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const (
	// Name is the rewriter's MutatingWebhookConfiguration: it sorts after archgate's.
	Name = "zz-image-rewriter"
	// NamespaceLabel set to "on" makes the apiserver call the rewriter for a namespace's pods.
	NamespaceLabel = "archgate-test/rewrite-images"
	// Annotation asks the rewriter to replace one image of a pod: "<from>=<to>".
	Annotation = "archgate-test/rewrite-image"
	path       = "/rewrite-images"
)

// Options say where the rewriter serves and whom it registers with.
type Options struct {
	// CertDir holds tls.crt and tls.key for 127.0.0.1 (envtest's webhook serving certificate).
	CertDir string
	// CABundle is the CA the apiserver verifies the certificate with.
	CABundle []byte
	// Client registers the webhook configuration.
	Client client.Client
}

// Start serves the rewriter and registers it until the test ends.
func Start(t testing.TB, opts Options) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: opts.CertDir})
	srv.Register(path, &admission.Webhook{Handler: admission.HandlerFunc(rewrite)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("image rewriter: %v", err)
		}
	})
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return srv.StartedChecker()(nil) == nil, nil
	})
	if err != nil {
		t.Fatalf("the image rewriter is not serving: %v", err)
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + path
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "rewrite-images.archgate-test.example",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: opts.CABundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceLabel: "on"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := opts.Client.Create(t.Context(), mwc); err != nil {
		t.Fatalf("registering the image rewriter: %v", err)
	}
	t.Cleanup(func() {
		if err := opts.Client.Delete(context.Background(), mwc); err != nil {
			t.Errorf("removing the image rewriter: %v", err)
		}
	})
}

// rewrite replaces the image the pod's Annotation names.
func rewrite(_ context.Context, req admission.Request) admission.Response {
	var p corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	from, to, ok := strings.Cut(p.Annotations[Annotation], "=")
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
