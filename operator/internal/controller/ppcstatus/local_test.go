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

package ppcstatus

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func localDeployment(available bool, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, UpdatedReplicas: 1}}
	status := corev1.ConditionFalse
	if available {
		status, d.Status.AvailableReplicas = corev1.ConditionTrue, 1
	}
	d.Status.Conditions = append(conds, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: status})
	return d
}

func TestNamespaceConditions(t *testing.T) {
	names := []string{"ctl", "wh"}
	ready := map[string]*appsv1.Deployment{"ctl": localDeployment(true), "wh": localDeployment(true)}
	invalid := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	type want struct{ Valid, Available, Progressing, Degraded string } // reasons
	tests := map[string]struct {
		siblings []v1beta1.PodPlacementConfig
		local    LocalComponents
		want     want
		message  string // a substring of NamespaceConfigsValid's message
	}{
		"local placement off": {
			siblings: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(1).WithPlatforms(objects.Platform("arm64", 10)).Build()},
			want:     want{v1beta1.ReasonAsExpected, v1beta1.ReasonLocalPlacementDisabled, v1beta1.ReasonLocalPlacementDisabled, v1beta1.ReasonLocalPlacementDisabled},
		},
		"local components ready": {
			siblings: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(1).WithPlatforms(objects.Platform("arm64", 10)).Build()},
			local:    LocalComponents{Enabled: true, Names: names, Deployments: ready},
			want:     want{v1beta1.ReasonAsExpected, v1beta1.ReasonAllComponentsReady, v1beta1.ReasonAsExpected, v1beta1.ReasonAsExpected},
		},
		"local components not created yet": {
			siblings: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(1).WithPlatforms(objects.Platform("arm64", 10)).Build()},
			local:    LocalComponents{Enabled: true, Names: names, Deployments: map[string]*appsv1.Deployment{"ctl": localDeployment(true)}},
			want:     want{v1beta1.ReasonAsExpected, v1beta1.ReasonComponentsUnavailable, v1beta1.ReasonRollingOut, v1beta1.ReasonAsExpected},
		},
		"a local rollout failed": {
			siblings: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(1).WithPlatforms(objects.Platform("arm64", 10)).Build()},
			local: LocalComponents{Enabled: true, Names: names, Deployments: map[string]*appsv1.Deployment{"ctl": localDeployment(true),
				"wh": localDeployment(false, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse})}},
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonComponentsUnavailable, v1beta1.ReasonAsExpected, v1beta1.ReasonComponentsUnavailable},
		},
		"two configurations share a priority": {
			siblings: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "b").WithGeneration(3).WithPriority(5).WithPlatforms(objects.Platform("arm64", 10)).Build(), *objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(5).WithPlatforms(objects.Platform("arm64", 10)).Build(), *objects.PodPlacementConfig("team", "c").WithGeneration(3).WithPriority(6).WithPlatforms(objects.Platform("arm64", 10)).Build()},
			want:     want{v1beta1.ReasonPriorityConflict, v1beta1.ReasonLocalPlacementDisabled, v1beta1.ReasonLocalPlacementDisabled, v1beta1.ReasonLocalPlacementDisabled},
			message:  "priority 5: a, b",
		},
		"another configuration has an invalid selector": {
			siblings: []v1beta1.PodPlacementConfig{*objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(1).WithPlatforms(objects.Platform("arm64", 10)).Build(), *objects.PodPlacementConfig("team", "broken").WithGeneration(3).WithPriority(2).WithLabelSelector(invalid).WithPlatforms(objects.Platform("arm64", 10)).Build()},
			want:     want{v1beta1.ReasonInvalidLabelSelector, v1beta1.ReasonLocalPlacementDisabled, v1beta1.ReasonLocalPlacementDisabled, v1beta1.ReasonLocalPlacementDisabled},
			message:  "broken (",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			self := tc.siblings[0]
			conds := NamespaceConditions(&self, tc.siblings, tc.local)
			reason := func(typ string) string {
				if c := meta.FindStatusCondition(conds, typ); c != nil {
					return c.Reason
				}
				return "<missing>"
			}
			got := want{reason(v1beta1.ConditionNamespaceConfigsValid), reason(v1beta1.ConditionAvailable),
				reason(v1beta1.ConditionProgressing), reason(v1beta1.ConditionDegraded)}
			if got != tc.want {
				t.Errorf("reasons = %+v, want %+v", got, tc.want)
			}
			if c := meta.FindStatusCondition(conds, v1beta1.ConditionNamespaceConfigsValid); !strings.Contains(c.Message, tc.message) {
				t.Errorf("message %q does not contain %q", c.Message, tc.message)
			}
		})
	}
}
