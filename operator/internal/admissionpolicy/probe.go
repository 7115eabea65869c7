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

package admissionpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The apiserver serves MutatingAdmissionPolicy even with its feature gate off, and then applies
// no policy: discovery cannot tell. The probe is a policy of its own that marks one kind of
// request only — a ConfigMap of the operator's namespace carrying ProbeLabel, created with a dry
// run — so that the operator can see whether policies are applied without touching a pod.
const (
	// ProbeLabel selects the probe's ConfigMaps.
	ProbeLabel = "multiarch.openshift.io/admission-policy-probe"
	// ProbeAnnotation is what the probe policy adds.
	ProbeAnnotation = "multiarch.openshift.io/admission-policy-applied"
)

// ProbePolicy returns the probe policy, named name, for the ConfigMaps of namespace.
func ProbePolicy(name, namespace string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}},
				ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{ProbeLabel: "true"}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{corev1.GroupName}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
							Scope: ptr.To(admissionregistrationv1.NamespacedScope),
						},
					},
				}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: 'add', path: '/metadata/annotations', value: {` +
					quote(ProbeAnnotation) + `: 'true'}}]`},
			}},
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// ProbeBinding returns the binding of the probe policy name.
func ProbeBinding(name string) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
}

// ProbeConfigMap returns the ConfigMap to create with a dry run in namespace.
func ProbeConfigMap(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: "archgate-admission-policy-probe", Labels: map[string]string{ProbeLabel: "true"},
	}}
}

// ProbeApplied reports whether the apiserver applied the probe policy to cm, as admitted.
func ProbeApplied(cm *corev1.ConfigMap) bool { return cm.Annotations[ProbeAnnotation] == "true" }
