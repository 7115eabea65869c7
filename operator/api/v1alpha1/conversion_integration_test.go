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

package v1alpha1_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/api/v1alpha1"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

// k8s talks to the package's control plane, which has archgate's CRDs and no operator: the
// conversion must work without one. warnings collects the apiserver's warnings to it.
var (
	k8s      client.Client
	warnings = &warningRecorder{}
)

// warningRecorder keeps every warning the apiserver sends.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings seen since the last call.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.seen
	w.seen = nil
	return seen
}

var _ rest.WarningHandler = (*warningRecorder)(nil)

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	os.Exit(testenv.Main(m, testenv.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}}, func(env *testenv.Env) error {
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandler = warnings
		var err error
		k8s, err = testenv.Client(cfg, v1beta1.AddToScheme, v1alpha1.AddToScheme)
		return err
	}))
}

// deleteCluster removes the singleton and waits until it is gone, so the next test can create it.
func deleteCluster(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cppc := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if err := k8s.Delete(ctx, cppc); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting ClusterPodPlacementConfig cluster: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(cppc), cppc)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("ClusterPodPlacementConfig cluster still exists: %v", err)
	}
}

// upstreamSelector is the namespace selector of the upstream operator's v1alpha1 sample.
var upstreamSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
	Key: v1beta1.LabelExcludeNamespace, Operator: metav1.LabelSelectorOpDoesNotExist,
}}}

// TestCreateV1alpha1ReadV1beta1: an upstream v1alpha1 manifest is accepted with the
// deprecation warning and reads back as v1beta1 with its fields and the v1beta1 defaults.
func TestCreateV1alpha1ReadV1beta1(t *testing.T) {
	ctx := context.Background()
	t.Cleanup(func() { deleteCluster(t) })
	warnings.take()
	alpha := &v1alpha1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{
			LogVerbosity:      v1beta1.LogVerbosityDebug,
			NamespaceSelector: upstreamSelector,
		},
	}
	if err := k8s.Create(ctx, alpha); err != nil {
		t.Fatalf("creating v1alpha1 ClusterPodPlacementConfig cluster: %v", err)
	}
	if got := warnings.take(); !slices.Contains(got, v1alpha1.DeprecationWarning) {
		t.Errorf("warnings %q, want %q", got, v1alpha1.DeprecationWarning)
	}

	beta := &v1beta1.ClusterPodPlacementConfig{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "cluster"}, beta); err != nil {
		t.Fatalf("reading ClusterPodPlacementConfig cluster as v1beta1: %v", err)
	}
	if beta.Spec.LogVerbosity != v1beta1.LogVerbosityDebug {
		t.Errorf("v1beta1 spec.logVerbosity = %q, want %q", beta.Spec.LogVerbosity, v1beta1.LogVerbosityDebug)
	}
	if diff := cmp.Diff(upstreamSelector, beta.Spec.NamespaceSelector); diff != "" {
		t.Errorf("v1beta1 spec.namespaceSelector (-want +got):\n%s", diff)
	}
	if beta.Spec.AdmissionPlacement != v1beta1.AdmissionPlacementEnabled {
		t.Errorf("v1beta1 spec.admissionPlacement = %q, want the default %q", beta.Spec.AdmissionPlacement, v1beta1.AdmissionPlacementEnabled)
	}
	// The v1alpha1 read of the same object is the v1beta1 one, field for field.
	if err := k8s.Get(ctx, client.ObjectKey{Name: "cluster"}, alpha); err != nil {
		t.Fatalf("reading ClusterPodPlacementConfig cluster as v1alpha1: %v", err)
	}
	if diff := cmp.Diff(beta.Spec, alpha.Spec); diff != "" {
		t.Errorf("v1alpha1 spec differs from the v1beta1 spec (-v1beta1 +v1alpha1):\n%s", diff)
	}
	if beta.ResourceVersion != alpha.ResourceVersion {
		t.Errorf("resourceVersion v1alpha1 %s, v1beta1 %s: want one object", alpha.ResourceVersion, beta.ResourceVersion)
	}
}

// TestWriteV1alpha1KeepsV1beta1Fields: writes through v1alpha1 — an update of the object read
// as v1alpha1, and a merge patch made of upstream fields only, as `kubectl apply` of an
// upstream manifest sends — keep the fields upstream's v1alpha1 never had.
func TestWriteV1alpha1KeepsV1beta1Fields(t *testing.T) {
	ctx := context.Background()
	t.Cleanup(func() { deleteCluster(t) })
	plugins := &v1beta1.Plugins{
		NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled:   true,
			Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 50}},
		},
		ExecFormatErrorMonitor: &v1beta1.ExecFormatErrorMonitor{Enabled: true},
	}
	beta := &v1beta1.ClusterPodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{
			Plugins:            plugins,
			AdmissionPlacement: v1beta1.AdmissionPlacementDisabled,
		},
	}
	if err := k8s.Create(ctx, beta); err != nil {
		t.Fatalf("creating v1beta1 ClusterPodPlacementConfig cluster: %v", err)
	}
	created := beta.Spec.DeepCopy()

	alpha := &v1alpha1.ClusterPodPlacementConfig{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "cluster"}, alpha); err != nil {
		t.Fatalf("reading ClusterPodPlacementConfig cluster as v1alpha1: %v", err)
	}
	alpha.Spec.LogVerbosity = v1beta1.LogVerbosityTrace
	if err := k8s.Update(ctx, alpha); err != nil {
		t.Fatalf("updating v1alpha1 ClusterPodPlacementConfig cluster: %v", err)
	}
	want := created.DeepCopy()
	want.LogVerbosity = v1beta1.LogVerbosityTrace
	assertSpec(t, "after a v1alpha1 update", want)

	patch := []byte(`{"apiVersion":"multiarch.openshift.io/v1alpha1","kind":"ClusterPodPlacementConfig",` +
		`"metadata":{"name":"cluster"},"spec":{"logVerbosity":"Normal","namespaceSelector":` +
		`{"matchExpressions":[{"key":"multiarch.openshift.io/exclude-pod-placement","operator":"DoesNotExist"}]}}}`)
	alpha = &v1alpha1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if err := k8s.Patch(ctx, alpha, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("merge-patching v1alpha1 ClusterPodPlacementConfig cluster: %v", err)
	}
	want.LogVerbosity = v1beta1.LogVerbosityNormal
	want.NamespaceSelector = upstreamSelector
	assertSpec(t, "after a v1alpha1 merge patch", want)
}

// assertSpec reads the singleton as v1beta1 and compares its spec.
func assertSpec(t *testing.T, when string, want *v1beta1.ClusterPodPlacementConfigSpec) {
	t.Helper()
	got := &v1beta1.ClusterPodPlacementConfig{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "cluster"}, got); err != nil {
		t.Fatalf("reading ClusterPodPlacementConfig cluster as v1beta1 %s: %v", when, err)
	}
	if diff := cmp.Diff(want, &got.Spec); diff != "" {
		t.Errorf("v1beta1 spec %s (-want +got):\n%s", when, diff)
	}
}
