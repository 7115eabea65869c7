package ppcstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func ppc(name string, priority int32, enabled bool, selector *metav1.LabelSelector) v1beta1.PodPlacementConfig {
	c := v1beta1.PodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Generation: 3},
		Spec:       v1beta1.PodPlacementConfigSpec{Priority: priority, LabelSelector: selector},
	}
	if enabled {
		c.Spec.Plugins = &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
			Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 10}},
		}}
	}
	return c
}

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
			ppc: ppc("a", 10, true, nil), cluster: available,
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonApplied},
		},
		"no cluster config": {
			ppc:  ppc("a", 10, true, nil),
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonClusterConfigMissing},
		},
		"cluster config not available": {
			ppc: ppc("a", 10, true, nil), cluster: unavailable,
			want: want{v1beta1.ReasonAsExpected, v1beta1.ReasonClusterConfigNotAvailable},
		},
		"invalid selector": {
			ppc: ppc("a", 10, true, invalid), cluster: available,
			want: want{v1beta1.ReasonInvalidLabelSelector, v1beta1.ReasonInvalidLabelSelector},
		},
		"plugin disabled": {
			ppc: ppc("a", 10, false, nil), cluster: available,
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
