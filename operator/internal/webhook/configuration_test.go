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

package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestConfiguration(t *testing.T) {
	url := "https://127.0.0.1:9443/gate-pods"
	userSelector := &metav1.LabelSelector{
		MatchLabels:      map[string]string{"team": "a"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}},
	}
	tests := map[string]struct {
		clientConfig      admissionregistrationv1.WebhookClientConfig
		caBundle          []byte
		selector          *metav1.LabelSelector
		operatorNamespace string
		wantClientConfig  admissionregistrationv1.WebhookClientConfig
		wantSelector      *metav1.LabelSelector
	}{
		"service without path gets the webhook path and the CA bundle": {
			clientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "archgate-system", Name: "webhook"}},
			caBundle:     []byte("CA"),
			wantClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: "archgate-system", Name: "webhook", Path: ptr.To(Path)},
				CABundle: []byte("CA"),
			},
			operatorNamespace: "archgate-system",
			wantSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: metadataNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"archgate-system", "kube-node-lease", "kube-public", "kube-system"}},
			}},
		},
		"URL kept, the user's selector ANDed with the exclusions": {
			clientConfig:     admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: []byte("kept")},
			wantClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: []byte("kept")},
			selector:         userSelector,
			wantSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"team": "a"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}},
					{Key: metadataNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-node-lease", "kube-public", "kube-system"}},
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.selector.DeepCopy()
			got := Configuration(ConfigurationOptions{
				Name: "archgate", ClientConfig: tc.clientConfig, CABundle: tc.caBundle,
				NamespaceSelector: tc.selector, OperatorNamespace: tc.operatorNamespace,
			})
			if got.Name != "archgate" || len(got.Webhooks) != 1 {
				t.Fatalf("got %s with %d webhooks", got.Name, len(got.Webhooks))
			}
			wh := got.Webhooks[0]
			if diff := cmp.Diff(tc.wantClientConfig, wh.ClientConfig); diff != "" {
				t.Errorf("clientConfig (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSelector, wh.NamespaceSelector); diff != "" {
				t.Errorf("namespaceSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.selector); diff != "" {
				t.Errorf("the caller's selector was modified:\n%s", diff)
			}
			wantRules := []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
					Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}}
			if diff := cmp.Diff(wantRules, wh.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if *wh.FailurePolicy != admissionregistrationv1.Ignore || *wh.SideEffects != admissionregistrationv1.SideEffectClassNone ||
				*wh.TimeoutSeconds != TimeoutSeconds || *wh.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
				t.Errorf("policies: failure %v sideEffects %v timeout %v reinvocation %v", *wh.FailurePolicy, *wh.SideEffects, *wh.TimeoutSeconds, *wh.ReinvocationPolicy)
			}
			wantCondition := "!(request.namespace.startsWith('kube-') || request.namespace.startsWith('openshift-') || request.namespace.startsWith('hypershift-'))"
			if len(wh.MatchConditions) != 1 || wh.MatchConditions[0].Expression != wantCondition {
				t.Errorf("matchConditions = %+v", wh.MatchConditions)
			}
		})
	}
}

func TestConfigurationWithThePolicyInEffect(t *testing.T) {
	for _, inEffect := range []bool{false, true} {
		got := Configuration(ConfigurationOptions{Name: "archgate", PolicyInEffect: inEffect}).Webhooks[0].MatchConditions
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		want := []string{"not-in-reserved-namespace"}
		if inEffect {
			want = append(want, "not-handled-by-admission-policy")
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("policy in effect %t: match conditions (-want +got):\n%s", inEffect, diff)
		}
		if inEffect {
			// The policy's label is read first: every exemption after it.
			wantExpr := "(" + PolicyHandledCondition() + "\n) &&\n(object.spec.?nodeName.orValue('') == ''\n) &&\n" +
				"(!object.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'DaemonSet')\n) &&\n" +
				`(!("kubernetes.io/arch" in object.spec.?nodeSelector.orValue({}))` + "\n)"
			if diff := cmp.Diff(wantExpr, got[1].Expression); diff != "" {
				t.Errorf("not-handled-by-admission-policy (-want +got):\n%s", diff)
			}
		}
	}
	// The objectSelector, checked by the apiserver before the match conditions, leaves out the
	// pods the policy labelled, and only those.
	for _, tc := range []struct {
		inEffect bool
		labels   map[string]string
		want     bool
	}{
		{inEffect: false, labels: map[string]string{v1beta1.LabelAdmissionPolicy: v1beta1.LabelValueTrue}, want: true},
		{inEffect: true, labels: nil, want: true},
		{inEffect: true, labels: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueAdmission}, want: true},
		{inEffect: true, labels: map[string]string{v1beta1.LabelAdmissionPolicy: "false"}, want: true},
		{inEffect: true, labels: map[string]string{v1beta1.LabelAdmissionPolicy: v1beta1.LabelValueTrue}, want: false},
	} {
		selector, err := metav1.LabelSelectorAsSelector(Configuration(ConfigurationOptions{Name: "archgate", PolicyInEffect: tc.inEffect}).Webhooks[0].ObjectSelector)
		if err != nil {
			t.Fatal(err)
		}
		if got := selector.Matches(labels.Set(tc.labels)); got != tc.want {
			t.Errorf("policy in effect %t: objectSelector %s matches a pod labelled %v = %t, want %t", tc.inEffect, selector, tc.labels, got, tc.want)
		}
	}
	if want := `!has(object.metadata.labels) || !("multiarch.openshift.io/scheduling-gate" in object.metadata.labels) || ` +
		`"multiarch.openshift.io/admission-placement" in object.metadata.?annotations.orValue({})`; PolicyHandledCondition() != want {
		t.Errorf("PolicyHandledCondition() = %s, want %s", PolicyHandledCondition(), want)
	}
}
