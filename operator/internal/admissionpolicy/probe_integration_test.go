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
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/admissionpolicy"
	"github.com/archgate/archgate/operator/internal/knownimages"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

// TestProbe: the probe policy marks its ConfigMap on an apiserver that applies policies, and
// not on one started with the MutatingAdmissionPolicy feature gate off — which still serves the
// API and accepts archgate's policy, its binding and params, and then admits pods unchanged
// and unlabelled, for the webhook to handle.
func TestProbe(t *testing.T) {
	if !probe(t, k8s) {
		t.Error("the probe was not applied by an apiserver that applies policies")
	}

	env, err := testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{"../../config/crd/bases"},
		APIServerArgs:     map[string]string{"feature-gates": "MutatingAdmissionPolicy=false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	off, err := testenv.Client(env.Config, clientgoscheme.AddToScheme, v1beta1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	if probe(t, off) {
		t.Error("the probe was applied with the MutatingAdmissionPolicy feature gate off")
	}
	opts := admissionpolicy.Options{Name: "archgate-placement", OperatorNamespace: operatorNamespace, Cluster: &v1beta1.ClusterPodPlacementConfig{}}
	params := paramsConfigMap(map[string]string{knownimages.ParameterKey("nginx"): "amd64"})
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}, params,
		admissionpolicy.Policy(opts), admissionpolicy.Binding(opts), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}} {
		if err := off.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T with the feature gate off: %v", obj, err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if err := off.Create(t.Context(), pod, client.DryRunAll); err != nil {
		t.Fatalf("a pod was refused with the feature gate off: %v", err)
	}
	if len(pod.Labels) > 0 || len(pod.Spec.SchedulingGates) > 0 || pod.Spec.Affinity != nil {
		t.Errorf("a pod was changed with the feature gate off: labels %v, gates %v, affinity %v", pod.Labels, pod.Spec.SchedulingGates, pod.Spec.Affinity)
	}
}

// probe installs the probe policy in namespace probe of c's apiserver and reports whether a dry
// run comes back marked. A policy takes the apiserver a moment to load: it is retried for a few
// seconds before the answer counts as no.
func probe(t *testing.T, c client.Client) bool {
	t.Helper()
	ctx := t.Context()
	const ns = "probe"
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		admissionpolicy.ProbePolicy("probe", ns), admissionpolicy.ProbeBinding("probe")} {
		if err := c.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	applied := false
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		cm := admissionpolicy.ProbeConfigMap(ns)
		if err := c.Create(ctx, cm, client.DryRunAll); err != nil {
			return false, err
		}
		applied = admissionpolicy.ProbeApplied(cm)
		return applied, nil
	})
	return applied
}
