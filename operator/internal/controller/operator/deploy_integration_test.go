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

package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// dryRunApply server-side applies every object in dry-run mode: the apiserver validates it
// fully (schema, CEL, admission) and persists nothing.
func dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			// envtest installed this very configuration, pointed at a local URL; merged with
			// the manifest's service reference it would have both. Check it as a new object.
			o.SetName(o.GetName() + "-render-check")
		}
		if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner("deploy-test"), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Errorf("the apiserver refuses %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// withoutPrometheusOperatorKinds leaves out the ServiceMonitor and PrometheusRule of the
// monitoring overlay: this apiserver has no Prometheus Operator CRDs (nor has a cluster
// without the Prometheus Operator, which is why they are optional). TestMonitoringComponent
// checks them, and make test-alerts has promtool check and test the rules.
func withoutPrometheusOperatorKinds(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().Group != "monitoring.coreos.com" {
			out = append(out, o)
		}
	}
	return out
}

// TestOverlaysAcceptedByAPIServer renders every overlay and has the real apiserver accept each
// object (the namespace exists: the suite created it).
func TestOverlaysAcceptedByAPIServer(t *testing.T) {
	for _, overlay := range overlays(t) {
		t.Run(overlay, func(t *testing.T) {
			dryRunApply(t, withoutPrometheusOperatorKinds(render(t, filepath.Join(deployDir, "overlays", overlay))))
		})
	}
	t.Run("samples", func(t *testing.T) {
		// A PodPlacementConfig needs the ClusterPodPlacementConfig (validating webhook) and its
		// namespace, even in dry-run.
		if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
			t.Fatal(err)
		}
		createCluster(t, v1beta1.ClusterPodPlacementConfigSpec{})
		files, err := filepath.Glob(filepath.Join(deployDir, "samples", "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("samples: %v %v", files, err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(raw, &u.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			dryRunApply(t, []*unstructured.Unstructured{u})
		}
	})
	t.Run("fleet", func(t *testing.T) {
		// KubeStellar's BindingPolicy lives in the WDS, not in a workload cluster.
		var workload []*unstructured.Unstructured
		for _, o := range render(t, filepath.Join(deployDir, "fleet")) {
			if o.GetKind() != "BindingPolicy" {
				workload = append(workload, o)
			}
		}
		dryRunApply(t, workload)
	})
}
