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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestGoMemLimit(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  string
	}{
		{512 << 20, "460MiB"}, // 460.8 MiB, rounded down
		{256 << 20, "230MiB"},
		{100 << 20, "90MiB"},
		{1 << 30, "921MiB"},
	} {
		if got := goMemLimit(tc.limit); got != tc.want {
			t.Errorf("goMemLimit(%d) = %s, want %s", tc.limit, got, tc.want)
		}
	}
}

// TestComponentsRuntimeSizing checks what each rendered Deployment's container gets: memory
// request and limit, GOMEMLIMIT at 90% of the limit, and GOGC.
func TestComponentsRuntimeSizing(t *testing.T) {
	p := params()
	sized := params()
	sized.components = &v1beta1.ComponentsConfig{
		Webhook: &v1beta1.ComponentResources{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}},
		Controller: &v1beta1.ComponentResources{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("200Mi")},
		}},
	}
	for _, tc := range []struct {
		name                   string
		spec                   corev1.PodSpec
		request, limit         string
		wantMemLimit, wantGOGC string
	}{
		{WebhookComponentName, typed[appsv1.Deployment](t, webhookDeployment(p)).Spec.Template.Spec, "64Mi", "256Mi", "230MiB", "50"},
		{ControllerComponentName, typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec, "128Mi", "512Mi", "460MiB", ""},
		// spec.components' resources replace the defaults whole: GOMEMLIMIT follows the limit, or
		// goes with it; GOGC stays.
		{"webhook with spec.components.webhook.resources", typed[appsv1.Deployment](t, webhookDeployment(sized)).Spec.Template.Spec, "100Mi", "1Gi", "921MiB", "50"},
		{"controller with requests only", typed[appsv1.Deployment](t, controllerDeployment(sized)).Spec.Template.Spec, "200Mi", "0", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.spec.Containers[0]
			if got := c.Resources.Requests.Memory().String(); got != tc.request {
				t.Errorf("memory request %s, want %s", got, tc.request)
			}
			if got := c.Resources.Limits.Memory().String(); got != tc.limit {
				t.Errorf("memory limit %s, want %s", got, tc.limit)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["GOMEMLIMIT"] != tc.wantMemLimit || env["GOGC"] != tc.wantGOGC {
				t.Errorf("GOMEMLIMIT %q GOGC %q, want %q and %q", env["GOMEMLIMIT"], env["GOGC"], tc.wantMemLimit, tc.wantGOGC)
			}
		})
	}
}
