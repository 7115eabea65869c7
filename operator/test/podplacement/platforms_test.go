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
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func osIn(oses ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: v1beta1.NodeOSLabel, Operator: corev1.NodeSelectorOpIn, Values: oses}
}

// TestOperatingSystemPlacement: with spec.operatingSystemPlacement Enabled in the
// ClusterPodPlacementConfig, the controller constrains kubernetes.io/os as well, one term per
// operating system the images share; a Windows-only image is placed on Windows nodes instead of
// being left Pending for want of a Linux architecture.
func TestOperatingSystemPlacement(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	multiOS := s.main.Reference("team/dockerlist", "v2") // linux/amd64, linux/arm/v7, windows/amd64
	windowsOnly := s.main.Reference("team/windows-app", "v1")
	linuxOnly := s.main.Reference("library/multi", "latest")
	cppc := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Spec: v1beta1.ClusterPodPlacementConfigSpec{OperatingSystemPlacement: v1beta1.OperatingSystemPlacementEnabled}}
	if err := s.client.Create(s.ctx, cppc); err != nil {
		t.Fatalf("creating the ClusterPodPlacementConfig: %v", err)
	}
	t.Cleanup(func() {
		if err := s.client.Delete(context.Background(), cppc); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting the ClusterPodPlacementConfig: %v", err)
		}
	})
	// The controller reads the configuration from its informer: probe until a pod is placed by
	// operating system.
	probes := 0
	eventually(t, "the controller placing by operating system", func(context.Context) (bool, error) {
		probes++
		probe := waitUngated(t, create(t, pod(ns, fmt.Sprintf("probe-%d", probes), linuxOnly), true))
		return cmp.Equal(probe.Spec.Affinity, objects.RequiredAffinity([]corev1.NodeSelectorRequirement{osIn("linux"), objects.ArchIn("amd64", "arm64", "ppc64le", "s390x")})), nil
	})

	for i, tc := range []struct {
		name   string
		images []string
		want   *corev1.Affinity
	}{
		{name: "an image of two operating systems: a term each", images: []string{multiOS},
			want: objects.RequiredAffinity([]corev1.NodeSelectorRequirement{osIn("linux"), objects.ArchIn("amd64", "arm")},
				[]corev1.NodeSelectorRequirement{osIn("windows"), objects.ArchIn("amd64")})},
		{name: "a windows-only image goes to windows nodes", images: []string{windowsOnly},
			want: objects.RequiredAffinity([]corev1.NodeSelectorRequirement{osIn("windows"), objects.ArchIn("amd64")})},
		{name: "with a linux-only image, only linux pairs remain", images: []string{multiOS, linuxOnly},
			want: objects.RequiredAffinity([]corev1.NodeSelectorRequirement{osIn("linux"), objects.ArchIn("amd64")})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waitUngated(t, create(t, pod(ns, fmt.Sprintf("os-%d", i), tc.images...), true))
			if diff := cmp.Diff(tc.want, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if l := got.Labels[v1beta1.LabelPlacement]; l != placement.OutcomeArchSet.LabelValue() {
				t.Errorf("placement label = %q, want %q", l, placement.OutcomeArchSet.LabelValue())
			}
		})
	}
}
