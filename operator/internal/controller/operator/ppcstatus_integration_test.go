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
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// TestPodPlacementConfigStatus: the operator writes each PodPlacementConfig's conditions and
// follows the ClusterPodPlacementConfig and the configuration's neighbours.
func TestPodPlacementConfigStatus(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ppc-status"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	config := func(name string, priority int32, selector *metav1.LabelSelector) *v1beta1.PodPlacementConfig {
		return &v1beta1.PodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name},
			Spec: v1beta1.PodPlacementConfigSpec{Priority: priority, LabelSelector: selector, Plugins: &v1beta1.Plugins{
				NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true,
					Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 10}}},
			}},
		}
	}
	// The validating webhook refuses a PodPlacementConfig without the cluster's.
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	first := config("first", 10, nil)
	if err := k8s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), first) })
	wantPPC(t, first, v1beta1.ConditionInEffect, v1beta1.ReasonApplied)
	wantPPC(t, first, v1beta1.ConditionSelectorValid, v1beta1.ReasonAsExpected)

	// The ClusterPodPlacementConfig losing its Available condition takes the configuration out
	// of effect.
	setDeploymentStatus(t, operator.WebhookComponentName, 0)
	wantPPC(t, first, v1beta1.ConditionInEffect, v1beta1.ReasonClusterConfigNotAvailable)
	setDeploymentStatus(t, operator.WebhookComponentName, operator.WebhookReplicas)
	wantPPC(t, first, v1beta1.ConditionInEffect, v1beta1.ReasonApplied)
}

// wantPPC waits until the configuration's condition has the reason.
func wantPPC(t *testing.T, ppc *v1beta1.PodPlacementConfig, condition, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("PodPlacementConfig %s: %s reason %s", ppc.Name, condition, reason), func() error {
		got := &v1beta1.PodPlacementConfig{}
		if err := k8s.Get(context.Background(), key(ppc.Namespace, ppc.Name), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, condition)
		if c == nil || c.Reason != reason {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}
