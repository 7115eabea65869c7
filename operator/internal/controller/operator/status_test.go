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

package operator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// newDeployment is a Deployment at generation 1 that wants replicas pods, none available yet.
func newDeployment(replicas int32) *objects.DeploymentBuilder {
	return objects.Deployment("", "").WithGeneration(1).WithReplicas(replicas)
}

func depCond(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: "msg"}
}

func TestObserveDeployment(t *testing.T) {
	availableTrue := depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable")
	tests := map[string]struct {
		d             *appsv1.Deployment
		wantAvailable bool
		wantRolledOut bool
		wantFailure   string
	}{
		"missing":                         {d: nil},
		"just created, no status":         {d: newDeployment(3).Build()},
		"all replicas available":          {d: newDeployment(3).WithObservedGeneration(1).WithUpdatedReplicas(3).WithAvailableReplicas(3).WithConditions(availableTrue).Build(), wantAvailable: true, wantRolledOut: true},
		"new generation not observed yet": {d: newDeployment(3).WithGeneration(2).WithObservedGeneration(1).WithUpdatedReplicas(3).WithAvailableReplicas(3).WithConditions(availableTrue).Build(), wantAvailable: true},
		"rolling: one replica updated":    {d: newDeployment(3).WithGeneration(2).WithObservedGeneration(2).WithUpdatedReplicas(1).WithAvailableReplicas(3).WithConditions(availableTrue).Build(), wantAvailable: true},
		"available condition without pods (stale)": {
			d: newDeployment(3).WithObservedGeneration(1).WithUpdatedReplicas(3).WithConditions(availableTrue).Build(),
		},
		"deadline exceeded": {
			d:           newDeployment(2).WithObservedGeneration(1).WithUpdatedReplicas(2).WithConditions(depCond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded")).Build(),
			wantFailure: "ProgressDeadlineExceeded: msg",
		},
		"replica failure": {
			d:           newDeployment(2).WithObservedGeneration(1).WithConditions(depCond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate")).Build(),
			wantFailure: "FailedCreate: msg",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := observeDeployment("ns/d", tc.d)
			if got.found != (tc.d != nil) || got.available != tc.wantAvailable || got.rolledOut != tc.wantRolledOut || got.failure != tc.wantFailure {
				t.Errorf("got found=%t available=%t rolledOut=%t failure=%q; want available=%t rolledOut=%t failure=%q",
					got.found, got.available, got.rolledOut, got.failure, tc.wantAvailable, tc.wantRolledOut, tc.wantFailure)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	up := deploymentState{key: "ns/x", found: true, available: true, rolledOut: true, replicas: 3, availableReplicas: 3, updatedReplicas: 3}
	rolling := up
	rolling.rolledOut = false
	down := deploymentState{key: "ns/x", found: true, replicas: 2}
	failed := down
	failed.failure = "ProgressDeadlineExceeded: too slow"
	prevAvailable := []metav1.Condition{{Type: v1beta1.ConditionAvailable, Status: metav1.ConditionTrue}}
	prevUnregistered := []metav1.Condition{{Type: v1beta1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonWebhookUnregistered}}

	type want struct{ available, progressing, degraded, deprovisioning, linked string }
	tests := map[string]struct {
		prev []metav1.Condition
		obs  observation
		want want // "Status/Reason" per condition
		// wantDegradedMessage is a substring of the Degraded message.
		wantDegradedMessage string
	}{
		"first rollout in progress": {
			obs:  observation{waiting: "deployments: ns/x has 0 of 3", webhook: down, controller: down},
			want: want{"False/ComponentsUnavailable", "True/RollingOut", "False/AsExpected", "False/AsExpected", "True/AsExpected"},
		},
		"everything up": {
			obs:  observation{webhook: up, controller: up, registered: true},
			want: want{"True/AllComponentsReady", "False/AsExpected", "False/AsExpected", "False/AsExpected", "True/AsExpected"},
		},
		"rolling update keeps Available": {
			obs:  observation{webhook: rolling, controller: up, registered: true},
			want: want{"True/AllComponentsReady", "True/RollingOut", "False/AsExpected", "False/AsExpected", "True/AsExpected"},
		},
		"available but not registered yet": {
			obs:  observation{webhook: up, controller: up},
			want: want{"False/ComponentsUnavailable", "False/AsExpected", "False/AsExpected", "False/AsExpected", "True/AsExpected"},
		},
		"lost a component after being available": {
			prev:                prevAvailable,
			obs:                 observation{webhook: up, controller: down, webhookConfigurationName: "mwc"},
			want:                want{"False/ComponentsUnavailable", "True/RollingOut", "True/WebhookUnregistered", "False/AsExpected", "True/AsExpected"},
			wantDegradedMessage: "the MutatingWebhookConfiguration mwc was removed",
		},
		"stays degraded until it is back": {
			prev: prevUnregistered,
			obs:  observation{webhook: up, controller: down},
			want: want{"False/ComponentsUnavailable", "True/RollingOut", "True/WebhookUnregistered", "False/AsExpected", "True/AsExpected"},
		},
		"rollout failed": {
			obs:                 observation{webhook: up, controller: failed},
			want:                want{"False/ComponentsUnavailable", "True/RollingOut", "True/ComponentsUnavailable", "False/AsExpected", "True/AsExpected"},
			wantDegradedMessage: "ProgressDeadlineExceeded: too slow",
		},
		"missing pull secret": {
			obs: observation{
				missing: []missingLink{{v1beta1.ReasonPullSecretNotFound, "Secret a/b missing"}, {v1beta1.ReasonCABundleNotFound, "ConfigMap c/d missing"}},
				waiting: "linked objects: Secret a/b missing", webhook: up, controller: up, registered: true,
			},
			want:                want{"True/AllComponentsReady", "True/RollingOut", "True/PullSecretNotFound", "False/AsExpected", "False/PullSecretNotFound"},
			wantDegradedMessage: "Secret a/b missing; ConfigMap c/d missing",
		},
		"mirror set entries left out: degraded, the rollout goes on": {
			obs: observation{mirrorSetProblems: []string{`ImageDigestMirrorSet a: spec.imageDigestMirrors[0].source "Bad": invalid`},
				configured: []string{"ImageDigestMirrorSet b (mirror sets, drop-in mirror-sets.conf)"}, webhook: up, controller: up, registered: true},
			want:                want{"True/AllComponentsReady", "False/AsExpected", "True/RegistryConfigInvalid", "False/AsExpected", "True/AsExpected"},
			wantDegradedMessage: `ImageDigestMirrorSet a: spec.imageDigestMirrors[0].source "Bad"`,
		},
		"apply failed": {
			obs:                 observation{applyErr: errors.New("deployments: applying Deployment ns/x: forbidden"), webhook: up, controller: up, registered: true},
			want:                want{"True/AllComponentsReady", "True/RollingOut", "True/ApplyFailed", "False/AsExpected", "True/AsExpected"},
			wantDegradedMessage: "forbidden",
		},
		"deleting": {
			prev: prevAvailable,
			obs:  observation{deleting: true, webhook: up, controller: up, release: &releaseProgress{phase: "releasing gated pods", released: 10, remaining: 5}},
			want: want{"False/ReleasingGatedPods", "False/ReleasingGatedPods", "False/AsExpected", "True/ReleasingGatedPods", "True/AsExpected"},
		},
		"deleting with release errors": {
			obs:                 observation{deleting: true, release: &releaseProgress{remaining: 3, errs: []error{errors.New("pod a/b: forbidden")}}},
			want:                want{"False/ReleasingGatedPods", "False/ReleasingGatedPods", "True/ReleaseFailed", "True/ReleasingGatedPods", "True/AsExpected"},
			wantDegradedMessage: "archgate ungate",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := conditions(tc.prev, tc.obs)
			sr := func(typ string) string { return string(got[typ].status) + "/" + got[typ].reason }
			gotWant := want{sr(v1beta1.ConditionAvailable), sr(v1beta1.ConditionProgressing), sr(v1beta1.ConditionDegraded),
				sr(v1beta1.ConditionDeprovisioning), sr(v1beta1.ConditionLinkedObjectsExist)}
			if diff := cmp.Diff(tc.want, gotWant, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if m := got[v1beta1.ConditionDegraded].message; !strings.Contains(m, tc.wantDegradedMessage) {
				t.Errorf("Degraded message %q lacks %q", m, tc.wantDegradedMessage)
			}
			for typ, c := range got {
				if c.message == "" {
					t.Errorf("%s has no message", typ)
				}
			}
		})
	}
}

func TestSetConditionsKeepsTransitionTimes(t *testing.T) {
	status := &v1beta1.ClusterPodPlacementConfigStatus{}
	obs := observation{webhook: deploymentState{found: true, available: true, rolledOut: true}, controller: deploymentState{found: true, available: true, rolledOut: true}, registered: true}
	setConditions(status, 1, conditions(nil, obs))
	first := status.Conditions[0].LastTransitionTime
	status.Conditions[0].LastTransitionTime = metav1.NewTime(first.Add(-1e9))
	kept := status.Conditions[0].LastTransitionTime
	setConditions(status, 2, conditions(status.Conditions, obs))
	if !status.Conditions[0].LastTransitionTime.Equal(&kept) {
		t.Error("an unchanged condition got a new transition time")
	}
	if status.ObservedGeneration != 2 || status.Conditions[0].ObservedGeneration != 2 {
		t.Errorf("observedGeneration %d / %d, want 2", status.ObservedGeneration, status.Conditions[0].ObservedGeneration)
	}
	if len(status.Conditions) != 6 {
		t.Errorf("%d conditions, want 6", len(status.Conditions))
	}
}

func TestUnavailableForRunsFromTheFirstSighting(t *testing.T) {
	r := &Reconciler{}
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	up := deploymentState{key: "ns/webhook", available: true, availableReplicas: 3}
	down := deploymentState{key: "ns/controller"}
	// The standby lost: the Deployment is not Available (maxUnavailable rounds to 0 of 2), but
	// the leader still places and releases pods.
	standbyLost := deploymentState{key: "ns/controller", replicas: 2, availableReplicas: 1}
	steps := []struct {
		at         time.Duration
		components []deploymentState
		want       time.Duration
	}{
		{0, []deploymentState{up, up}, -1},
		{time.Second, []deploymentState{up, down}, 0},
		{11 * time.Second, []deploymentState{up, down}, 10 * time.Second},
		{12 * time.Second, []deploymentState{up, {key: "ns/controller", available: true, availableReplicas: 1}}, -1},
		{13 * time.Second, []deploymentState{up, down}, 0},
		{14 * time.Second, []deploymentState{up, standbyLost}, -1},
		{90 * time.Second, []deploymentState{up, standbyLost}, -1},
	}
	for i, s := range steps {
		if got := r.unavailableFor(t0.Add(s.at), s.components...); got != s.want {
			t.Errorf("step %d at %v: unavailable for %v, want %v", i, s.at, got, s.want)
		}
	}
}

func TestPolicyCondition(t *testing.T) {
	tests := map[string]struct {
		obs        observation
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		"not evaluated yet":        {obs: observation{}, wantStatus: metav1.ConditionFalse, wantReason: v1beta1.ReasonPolicyPending},
		"deleting":                 {obs: observation{deleting: true, policy: policyState{decided: true, wanted: true, served: true}}, wantStatus: metav1.ConditionFalse, wantReason: v1beta1.ReasonPolicyNotWanted},
		"turned off":               {obs: observation{policy: policyState{decided: true, served: true, why: "off"}}, wantStatus: metav1.ConditionFalse, wantReason: v1beta1.ReasonPolicyNotWanted},
		"API not served":           {obs: observation{policy: policyState{decided: true, wanted: true}}, wantStatus: metav1.ConditionFalse, wantReason: v1beta1.ReasonPolicyAPINotServed},
		"components not up":        {obs: observation{policy: policyState{decided: true, wanted: true, served: true}}, wantStatus: metav1.ConditionFalse, wantReason: v1beta1.ReasonPolicyPending},
		"feature gate off":         {obs: observation{policy: policyState{decided: true, wanted: true, served: true, applied: true}}, wantStatus: metav1.ConditionFalse, wantReason: v1beta1.ReasonPolicyNotEnforced},
		"applied by the apiserver": {obs: observation{policy: policyState{decided: true, wanted: true, served: true, applied: true, enforced: true}}, wantStatus: metav1.ConditionTrue, wantReason: v1beta1.ReasonPolicyEnforced},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := policyCondition(tt.obs)
			if got.status != tt.wantStatus || got.reason != tt.wantReason || got.message == "" {
				t.Errorf("policyCondition = %+v, want %s %s with a message", got, tt.wantStatus, tt.wantReason)
			}
		})
	}
}
