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
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// TestMirrorCredentials: imageInspection.mirrorCredentialsSecretRef reaches the controller as
// its mounted auth file (--auth-file); a missing or malformed Secret holds the rollout with
// Degraded naming the Secret and the field, never its content; a changed Secret rolls the
// controller out.
func TestMirrorCredentials(t *testing.T) {
	ctx := context.Background()
	const password = "mirror-password-never-shown"
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "mirror-auth"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"mirror.example": {"auth": "` + password + `"}}}`)},
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, secret) })
	createCluster(t, v1beta1.ClusterPodPlacementConfigSpec{
		ImageInspection: &v1beta1.ImageInspection{MirrorCredentialsSecretRef: &v1beta1.LocalSecretReference{Name: secret.Name}},
	})

	c := wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonRegistryConfigNotFound)
	if want := "Secret archgate-system/mirror-auth named by spec.imageInspection.mirrorCredentialsSecretRef does not exist"; !strings.Contains(c.Message, want) {
		t.Errorf("Degraded message %q lacks %q", c.Message, want)
	}

	// Malformed ("auth" is not base64 of user:password): refused before rollout, the content never shown.
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c = wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonRegistryConfigInvalid)
	if want := "Secret archgate-system/mirror-auth named by spec.imageInspection.mirrorCredentialsSecretRef: pull secret archgate-system/mirror-auth key .dockerconfigjson"; !strings.Contains(c.Message, want) {
		t.Errorf("Degraded message %q lacks %q", c.Message, want)
	}
	if strings.Contains(c.Message, password) {
		t.Errorf("Degraded message %q shows the password", c.Message)
	}

	secret.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths": {"mirror.example": {"username": "pull", "password": "` + password + `"}}}`)
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
	d := getDeployment(t, operator.ControllerComponentName)
	wantArg := "--auth-file=" + operator.MirrorCredentialsDir + "/" + operator.MirrorCredentialsFile
	eventually(t, 30*time.Second, "controller rendered with the mirror credentials", func() error {
		d = getDeployment(t, operator.ControllerComponentName)
		return mirrorCredentialsRendered(d, secret.Name, wantArg)
	})
	if webhook := getDeployment(t, operator.WebhookComponentName); containsArg(webhook.Spec.Template.Spec.Containers[0].Args, wantArg) {
		t.Errorf("the webhook got the mirror credentials: %q", webhook.Spec.Template.Spec.Containers[0].Args)
	}
	hash := d.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]
	if hash == "" {
		t.Fatal("no linked-objects hash on the controller's pod template")
	}

	// A changed Secret rolls the controller out (its mounted file would follow anyway, late).
	secret.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths": {"mirror.example": {"username": "pull", "password": "rotated"}}}`)
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "controller rolled out with the rotated Secret", func() error {
		if h := getDeployment(t, operator.ControllerComponentName).Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]; h == hash {
			return fmt.Errorf("pod template hash still %q", h)
		}
		return nil
	})
	cppc := getCluster(t)
	for _, cond := range cppc.Status.Conditions {
		if strings.Contains(cond.Message, password) || strings.Contains(cond.Message, "rotated") {
			t.Errorf("condition %s shows the Secret's content: %q", cond.Type, cond.Message)
		}
	}
}

// mirrorCredentialsRendered checks the controller's auth-file flag and the Secret volume that
// mounts the Secret's .dockerconfigjson as that file.
func mirrorCredentialsRendered(d *appsv1.Deployment, secret, wantArg string) error {
	spec := d.Spec.Template.Spec
	if !containsArg(spec.Containers[0].Args, wantArg) {
		return fmt.Errorf("controller args %q lack %q", spec.Containers[0].Args, wantArg)
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret })
	if i < 0 {
		return fmt.Errorf("no volume of Secret %s in %v", secret, spec.Volumes)
	}
	want := []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: operator.MirrorCredentialsFile}}
	if got := spec.Volumes[i].Secret.Items; !slices.Equal(got, want) {
		return fmt.Errorf("volume items %v, want %v", got, want)
	}
	mounted := slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == spec.Volumes[i].Name && m.MountPath == operator.MirrorCredentialsDir && m.ReadOnly
	})
	if !mounted {
		return fmt.Errorf("volume %s not mounted read-only at %s: %v", spec.Volumes[i].Name, operator.MirrorCredentialsDir, spec.Containers[0].VolumeMounts)
	}
	return nil
}
