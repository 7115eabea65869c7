package ppcstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func TestConditions(t *testing.T) {
	available := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
		Status: v1beta1.ClusterPodPlacementConfigStatus{Conditions: []metav1.Condition{{Type: v1beta1.ConditionAvailable, Status: metav1.ConditionTrue}}}}
	unavailable := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}
	invalid := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	type want struct{ Valid, InEffect string } // reasons
	tests := map[string]struct {
		ppc     v1beta1.PodPlacementConfig
		cluster *v1beta1.ClusterPodPlacementConfig
		want    want
	}{
		"in effect": {
			ppc: *objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(10).WithPlatforms(objects.Platform("arm64", 10)).Build(), cluster: available,
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonApplied},
		},
		"no cluster config": {
			ppc:  *objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(10).WithPlatforms(objects.Platform("arm64", 10)).Build(),
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonClusterConfigMissing},
		},
		"cluster config not available": {
			ppc: *objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(10).WithPlatforms(objects.Platform("arm64", 10)).Build(), cluster: unavailable,
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonClusterConfigNotAvailable},
		},
		"invalid selector": {
			ppc: *objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(10).WithLabelSelector(invalid).WithPlatforms(objects.Platform("arm64", 10)).Build(), cluster: available,
			want: want{v1beta1.ReasonInvalidLabelSelector, v1beta1.ReasonInvalidLabelSelector},
		},
		"plugin disabled": {
			ppc: *objects.PodPlacementConfig("team", "a").WithGeneration(3).WithPriority(10).Build(), cluster: available,
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonPluginDisabled},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conds := Conditions(&tc.ppc, tc.cluster)
			got := want{}
			for _, c := range conds {
				if c.ObservedGeneration != 3 {
					t.Errorf("%s observedGeneration = %d, want 3", c.Type, c.ObservedGeneration)
				}
				if (c.Status == metav1.ConditionTrue) != (c.Reason == v1beta1.ReasonAsExpected || c.Reason == v1beta1.ReasonApplied) {
					t.Errorf("%s: status %s with reason %s", c.Type, c.Status, c.Reason)
				}
				switch c.Type {
				case v1beta1.ConditionSelectorValid:
					got.Valid = c.Reason
				case v1beta1.ConditionInEffect:
					got.InEffect = c.Reason
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
