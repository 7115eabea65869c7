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

package v1beta1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestComponentsConfigValidate(t *testing.T) {
	resources := func(request, limit string) *ComponentResources {
		return &ComponentResources{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)},
		}}
	}
	for _, tc := range []struct {
		name string
		c    *ComponentsConfig
		// want are the substrings of the error, in order; none: valid.
		want []string
	}{
		{name: "unset", c: nil},
		{name: "every field valid", c: &ComponentsConfig{
			ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "mirror-pull"}},
			NodeSelector:      map[string]string{"node-role.kubernetes.io/infra": ""},
			Tolerations:       []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, {Operator: corev1.TolerationOpExists}},
			PriorityClassName: "system-cluster-critical",
			Webhook:           resources("64Mi", "256Mi"),
			Controller:        &ComponentResources{},
		}},
		{name: "pull secret name", c: &ComponentsConfig{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "Mirror_Pull"}}},
			want: []string{`spec.components.imagePullSecrets[0].name: Invalid value: "Mirror_Pull"`}},
		{name: "node selector key", c: &ComponentsConfig{NodeSelector: map[string]string{"bad key": "x"}},
			want: []string{`spec.components.nodeSelector: Invalid value: "bad key"`}},
		{name: "toleration value with Exists", c: &ComponentsConfig{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}},
			want: []string{`spec.components.tolerations[0].value: Invalid value: "v": must be empty when operator is Exists`}},
		{name: "toleration without key must be Exists", c: &ComponentsConfig{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpEqual}}},
			want: []string{`spec.components.tolerations[0].operator: Invalid value: "Equal": must be Exists when key is empty`}},
		{name: "toleration effect", c: &ComponentsConfig{Tolerations: []corev1.Toleration{{Key: "k", Value: "v", Effect: "NoRun"}}},
			want: []string{`spec.components.tolerations[0].effect: Unsupported value: "NoRun"`}},
		{name: "tolerationSeconds without NoExecute", c: &ComponentsConfig{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](30)}}},
			want: []string{`spec.components.tolerations[0].effect: Invalid value: "": must be NoExecute when tolerationSeconds is set`}},
		{name: "priority class", c: &ComponentsConfig{PriorityClassName: "High"},
			want: []string{`spec.components.priorityClassName: Invalid value: "High"`}},
		{name: "request above limit", c: &ComponentsConfig{Controller: resources("1Gi", "512Mi")},
			want: []string{`spec.components.controller.resources.requests[memory]: Invalid value: "1Gi": must be less than or equal to the limit 512Mi`}},
		{name: "negative limit", c: &ComponentsConfig{Webhook: resources("-1", "-1")},
			want: []string{`spec.components.webhook.resources.limits[memory]: Invalid value: "-1": must not be negative`,
				`spec.components.webhook.resources.requests[memory]: Invalid value: "-1": must not be negative`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.c.Validate(field.NewPath("spec", "components"))
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate() = %v; want %d errors %q", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q; want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}
