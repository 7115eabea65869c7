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
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
)

// pluginExecutions counts the fake credential provider plugin's executions so far.
func pluginExecutions(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(s.pluginLog)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Fields(string(data)))
}

// TestCredentialProviderPlugin: a private image that no pull secret covers is placed thanks to
// the kubelet credential provider plugin's credentials, and the plugin's response is cached
// (cacheKeyType Registry) across pods.
func TestCredentialProviderPlugin(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	image := s.main.Reference("plugin-only/app", "v1")
	before := pluginExecutions(t)

	first := waitUngated(t, create(t, pod(ns, "first", image), true))
	if got, want := first.Labels[v1beta1.LabelPlacement], placement.OutcomeArchSet.LabelValue(); got != want {
		t.Fatalf("pod with a plugin-only image: placement %q (%s), want %q", got, first.Annotations[v1beta1.AnnotationInspectionError], want)
	}
	if got := first.Annotations[v1beta1.AnnotationArchitectures]; got != "ppc64le,s390x" {
		t.Errorf("architectures %q, want ppc64le,s390x", got)
	}
	second := waitUngated(t, create(t, pod(ns, "second", s.main.Reference("plugin-only/app", "v1")), true))
	if second.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() {
		t.Fatalf("second pod: placement %q", second.Labels[v1beta1.LabelPlacement])
	}
	if n := pluginExecutions(t) - before; n != 1 {
		t.Errorf("plugin executed %d times for two pods, want 1 (its response is cached for the registry)", n)
	}
}

// TestCredentialProviderAdmission: results read with the plugin's credentials are node
// credentials, which the kubelet gives every pod: they are published for admission placement.
func TestCredentialProviderAdmission(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	labelNamespace(t, ns)
	image := s.main.Reference("plugin-only/admitted", "v1")
	first := waitUngated(t, create(t, pod(ns, "first", image), true))
	if first.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() {
		t.Fatalf("first pod: placement %q (%s)", first.Labels[v1beta1.LabelPlacement], first.Annotations[v1beta1.AnnotationInspectionError])
	}
	eventually(t, "the webhook placing the plugin-read image at admission", func(ctx context.Context) (bool, error) {
		probe := pod(ns, "probe", image)
		if err := s.client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		return probe.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission, nil
	})
}

// TestCredentialProviderFileCredentials: a plugin that reads its credentials from the file its
// args name, as AKS's acr-credential-provider reads the node's azure.json, gets a private image
// placed with the right password in that file; with a wrong one, the pod is released
// inspection-failed. The file is the copy hostfiles.Copy makes of a root-only (0600) host file,
// as the controller's init container makes it; a new password is copied again, as at the
// controller pod's next start.
func TestCredentialProviderFileCredentials(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	t.Cleanup(func() {
		if err := writePluginCredentials(filePassword); err != nil {
			t.Error(err)
		}
	})

	placed := waitUngated(t, create(t, pod(ns, "right-password", s.main.Reference("file-creds/app", "v1")), true))
	if got, want := placed.Labels[v1beta1.LabelPlacement], placement.OutcomeArchSet.LabelValue(); got != want {
		t.Fatalf("right password in the file: placement %q (%s), want %q", got, placed.Annotations[v1beta1.AnnotationInspectionError], want)
	}
	if got := placed.Annotations[v1beta1.AnnotationArchitectures]; got != "arm64,ppc64le" {
		t.Errorf("architectures %q, want arm64,ppc64le", got)
	}

	if err := writePluginCredentials("not-" + filePassword); err != nil {
		t.Fatal(err)
	}
	image := s.main.Reference("file-creds/rotated", "v1")
	failed := waitUngated(t, create(t, pod(ns, "wrong-password", image), true))
	if got, want := failed.Labels[v1beta1.LabelPlacement], placement.OutcomeInspectionFailed.LabelValue(); got != want {
		t.Fatalf("wrong password in the file: placement %q, want %q", got, want)
	}
	if want := "auth: " + image; failed.Annotations[v1beta1.AnnotationInspectionError] != want {
		t.Errorf("inspection error annotation = %q, want %q", failed.Annotations[v1beta1.AnnotationInspectionError], want)
	}
}
