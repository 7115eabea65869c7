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
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// TestAdmissionPlacement: the first pod of an image is gated and placed by the controller, which
// publishes the image; the next pods of that image are placed by the webhook at admission, with
// exactly the controller's affinity, labels and annotation, never gated and never written again;
// a pod with imagePullSecrets is still gated.
func TestAdmissionPlacement(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	labelNamespace(t, ns)
	image := s.main.Reference("team/dockerlist", "v2")

	first := waitUngated(t, create(t, pod(ns, "first", image), true))

	// The controller publishes within a second; the webhook's informer follows. Dry runs show
	// when the webhook knows the image, without leaving pods behind.
	eventually(t, "the webhook placing the image at admission", func(ctx context.Context) (bool, error) {
		probe := pod(ns, "probe", image)
		if err := s.client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		return probe.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission, nil
	})

	pw := watchPods(t, ns)
	second := create(t, pod(ns, "second", image), false)
	if gated(second) || second.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueAdmission {
		t.Fatalf("second pod: gates %v, labels %v; want placed at admission", second.Spec.SchedulingGates, second.Labels)
	}
	if diff := cmp.Diff(first.Spec.Affinity, second.Spec.Affinity); diff != "" {
		t.Errorf("affinity at admission differs from the controller's (-controller +admission):\n%s", diff)
	}
	for _, key := range []string{v1beta1.LabelPlacement} {
		if first.Labels[key] != second.Labels[key] {
			t.Errorf("label %s: controller %q, admission %q", key, first.Labels[key], second.Labels[key])
		}
	}
	if a := v1beta1.AnnotationArchitectures; first.Annotations[a] != second.Annotations[a] {
		t.Errorf("annotation %s: controller %q, admission %q", a, first.Annotations[a], second.Annotations[a])
	}

	withSecret := pod(ns, "with-secret", image)
	withSecret.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	create(t, withSecret, true)
	waitUngated(t, withSecret)
	if n := pw.untilUngated(t, withSecret.Name)[second.Name]; n != 0 {
		t.Errorf("the pod placed at admission was modified %d times, want 0", n)
	}
}

// labelNamespace moves ns to the admission-placement webhook.
func labelNamespace(t *testing.T, ns string) {
	t.Helper()
	labelNamespaceWith(t, ns, admissionPlacementLabel, "on")
}

// labelNamespaceWith sets the label key=value on ns.
func labelNamespaceWith(t *testing.T, ns, key, value string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value))
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := s.client.Patch(s.ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}
