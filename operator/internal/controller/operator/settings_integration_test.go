//go:build integration

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

package operator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/controller/operator"
	"github.com/archgate/archgate/operator/internal/version"
)

// controllerSettings parses the controller Deployment's arguments as the archgate binary does.
func controllerSettings(t *testing.T) (v1beta1.ImageInspectionSettings, error) {
	t.Helper()
	args := getDeployment(t, operator.ControllerComponentName).Spec.Template.Spec.Containers[0].Args
	for _, flag := range []string{cmdline.FlagCacheSize, cmdline.FlagCacheTTL, cmdline.FlagInspectTimeout, cmdline.FlagMaxRetries,
		cmdline.FlagFailureCacheTTL, cmdline.FlagMaxGateAge, cmdline.FlagMaxImagesPerPod, cmdline.FlagBlockedNetworks} {
		if argWithPrefix(args, "--"+flag+"=") == "" {
			return v1beta1.ImageInspectionSettings{}, fmt.Errorf("controller args %q lack --%s: the binary's default would decide", args, flag)
		}
	}
	_, flags, err := cmdline.ParseController(args[1:])
	if err != nil {
		return v1beta1.ImageInspectionSettings{}, err
	}
	return *flags.ImageInspection, nil
}

// TestImageInspectionSettingsReachTheController: spec.imageInspection is resolved once by the
// operator and rendered into the controller's arguments; a change of the CR changes the
// Deployment (and so rolls the controller), and the webhook is left alone.
func TestImageInspectionSettingsReachTheController(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	got, err := controllerSettings(t)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1beta1.DefaultImageInspectionSettings(), got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("controller settings without spec.imageInspection (-api defaults +deployment):\n%s", diff)
	}
	webhookGeneration := getDeployment(t, operator.WebhookComponentName).Generation

	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.ImageInspection = &v1beta1.ImageInspection{
			CacheSize: ptr.To[int32](0), CacheTTL: &metav1.Duration{Duration: 90 * time.Second},
			Timeout: &metav1.Duration{Duration: 45 * time.Second}, MaxRetries: ptr.To[int32](8),
			FailureCacheTTL: &metav1.Duration{Duration: 20 * time.Second}, MaxGateAge: &metav1.Duration{Duration: 2 * time.Hour},
			BlockedNetworks: []string{"169.254.0.0/16", "10.96.0.0/12"}, AllowedRegistries: []string{"quay.io", "*.corp.example"},
		}
	})
	want := v1beta1.ImageInspectionSettings{CacheSize: 0, CacheTTL: 90 * time.Second, Timeout: 45 * time.Second, MaxRetries: 8,
		FailureCacheTTL: 20 * time.Second, MaxGateAge: 2 * time.Hour, MaxImagesPerPod: v1beta1.DefaultMaxImagesPerPod,
		BlockedNetworks: []string{"169.254.0.0/16", "10.96.0.0/12"}, AllowedRegistries: []string{"quay.io", "*.corp.example"}}
	eventually(t, 30*time.Second, "the CR's imageInspection in the controller's arguments", func() error {
		got, err := controllerSettings(t)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("(-cr +deployment):\n%s", diff)
		}
		return nil
	})
	wantCondition(t, v1beta1.ConditionProgressing, metav1.ConditionTrue, v1beta1.ReasonRollingOut)
	if g := getDeployment(t, operator.WebhookComponentName).Generation; g != webhookGeneration {
		t.Errorf("the webhook Deployment changed (generation %d, was %d) for a controller setting", g, webhookGeneration)
	}

	// maxImagesPerPod is the webhook's too: it admits pods naming more ungated.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.ImageInspection.MaxImagesPerPod = ptr.To[int32](12) })
	eventually(t, 30*time.Second, "maxImagesPerPod in both components' arguments", func() error {
		for _, name := range []string{operator.ControllerComponentName, operator.WebhookComponentName} {
			args := getDeployment(t, name).Spec.Template.Spec.Containers[0].Args
			if want := "--" + cmdline.FlagMaxImagesPerPod + "=12"; argWithPrefix(args, want) != want {
				return fmt.Errorf("%s args %q lack %s", name, args, want)
			}
		}
		return nil
	})

	// Back to the defaults when the field goes away.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.ImageInspection = nil })
	eventually(t, 30*time.Second, "the defaults back in the controller's arguments", func() error {
		got, err := controllerSettings(t)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(v1beta1.DefaultImageInspectionSettings(), got, cmpopts.EquateEmpty()); diff != "" {
			return fmt.Errorf("(-defaults +deployment):\n%s", diff)
		}
		return nil
	})
}

// TestComponentsReachTheDeployments: spec.components, set in the CR, is read back from the
// webhook's and the controller's Deployments, and taken out again when the field goes away.
func TestComponentsReachTheDeployments(t *testing.T) {
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	if got := getCluster(t).Status.OperatorVersion; got != version.Get().Version {
		t.Errorf("status.operatorVersion %q, want the operator's %q", got, version.Get().Version)
	}
	components := &v1beta1.ComponentsConfig{
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "mirror-pull"}},
		NodeSelector:      map[string]string{"node-role.kubernetes.io/infra": ""},
		Tolerations:       []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: "system-cluster-critical",
		Controller: &v1beta1.ComponentResources{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}},
	}
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.Components = components })
	scheduling := func(spec corev1.PodSpec) string {
		return fmt.Sprintf("pull secrets %v, node selector %v, tolerations %v, priority class %q",
			spec.ImagePullSecrets, spec.NodeSelector, spec.Tolerations, spec.PriorityClassName)
	}
	want := scheduling(corev1.PodSpec{ImagePullSecrets: components.ImagePullSecrets, NodeSelector: components.NodeSelector,
		Tolerations: components.Tolerations, PriorityClassName: components.PriorityClassName})
	eventually(t, 30*time.Second, "spec.components in both Deployments", func() error {
		for _, name := range []string{operator.WebhookComponentName, operator.ControllerComponentName} {
			if got := scheduling(getDeployment(t, name).Spec.Template.Spec); got != want {
				return fmt.Errorf("%s: %s; want %s", name, got, want)
			}
		}
		c := getDeployment(t, operator.ControllerComponentName).Spec.Template.Spec.Containers[0]
		if diff := cmp.Diff(*components.Controller.Resources, c.Resources, cmpopts.EquateEmpty()); diff != "" {
			return fmt.Errorf("controller resources (-cr +deployment):\n%s", diff)
		}
		if env := envValue(c.Env, "GOMEMLIMIT"); env != "921MiB" {
			return fmt.Errorf("controller GOMEMLIMIT %q, want 921MiB (90%% of the 1Gi limit)", env)
		}
		return nil
	})
	// The webhook keeps its default size: only what is set changes.
	if got := getDeployment(t, operator.WebhookComponentName).Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != "256Mi" {
		t.Errorf("webhook memory limit %s, want the default 256Mi", got)
	}
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.Components = nil })
	eventually(t, 30*time.Second, "the defaults back in both Deployments", func() error {
		for _, name := range []string{operator.WebhookComponentName, operator.ControllerComponentName} {
			if got, none := scheduling(getDeployment(t, name).Spec.Template.Spec), scheduling(corev1.PodSpec{}); got != none {
				return fmt.Errorf("%s: %s; want %s", name, got, none)
			}
		}
		if got := getDeployment(t, operator.ControllerComponentName).Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != "512Mi" {
			return fmt.Errorf("controller memory limit %s, want the default 512Mi", got)
		}
		return nil
	})
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
