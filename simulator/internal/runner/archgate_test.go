package runner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"

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

// TestAdminClusterConfig: the ClusterPodPlacementConfig the run writes is the user's spec
// with the references the run sets (global pull secret, registry CA) and its labels, and the
// user's own fields kept.
func TestAdminClusterConfig(t *testing.T) {
	certs := &v1beta1.NamespacedObjectReference{Namespace: "archgate-system", Name: registryCertsConfigMap}
	user := v1beta1.ClusterPodPlacementConfigSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
	for name, tc := range map[string]struct {
		admin adminConfig
		want  v1beta1.ClusterPodPlacementConfigSpec
	}{
		"no references": {admin: adminConfig{namespace: "archgate-system"}, want: user},
		"global pull secret and registry CA": {
			admin: adminConfig{namespace: "archgate-system", global: true, certsRef: certs, labels: map[string]string{"run": "x"}},
			want: v1beta1.ClusterPodPlacementConfigSpec{NamespaceSelector: user.NamespaceSelector,
				GlobalPullSecretRef:       &v1beta1.NamespacedObjectReference{Namespace: "archgate-system", Name: globalPullSecretName},
				RegistryCertsConfigmapRef: certs},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := tc.admin.clusterConfig(user)
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.admin.labels, got.Labels); diff != "" || got.Name != v1beta1.SingletonName {
				t.Errorf("name %q, labels (-want +got):\n%s", got.Name, diff)
			}
			if user.GlobalPullSecretRef != nil || user.RegistryCertsConfigmapRef != nil {
				t.Errorf("the user's spec was changed: %+v", user)
			}
		})
	}
}
