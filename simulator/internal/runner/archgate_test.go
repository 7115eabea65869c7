package runner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestNotRolledOut(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, Message: "m"}
	}
	done := []metav1.Condition{cond(v1beta1.ConditionAvailable, metav1.ConditionTrue, 2), cond(v1beta1.ConditionProgressing, metav1.ConditionFalse, 2)}
	for _, tc := range []struct {
		name       string
		observed   int64
		conditions []metav1.Condition
		want       string // a part of the reason; "" for rolled out
	}{
		{"rolled out", 2, done, ""},
		{"status of an older generation", 1, done, "observedGeneration 1, generation 2"},
		{"no conditions yet", 2, nil, "no Available condition"},
		{"still progressing", 2, []metav1.Condition{done[0], cond(v1beta1.ConditionProgressing, metav1.ConditionTrue, 2)}, "Progressing is True"},
		{"not available", 2, []metav1.Condition{cond(v1beta1.ConditionAvailable, metav1.ConditionFalse, 2), done[1]}, "Available is False"},
		{"conditions of an older generation", 2, []metav1.Condition{done[0], cond(v1beta1.ConditionProgressing, metav1.ConditionFalse, 1)}, "for generation 1, want False for 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Generation: 2}}
			c.Status.ObservedGeneration, c.Status.Conditions = tc.observed, tc.conditions
			got := notRolledOut(c)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("notRolledOut = %q, want %q", got, tc.want)
			}
		})
	}
}
