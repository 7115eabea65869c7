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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// TestDefaultGlobalPullSecret checks seed 004's default: without globalPullSecretRef the
// Secret "pull-secret" of the operator's namespace is the global pull secret once it exists
// (its creation rolls the controller with it), and its absence blocks nothing.
func TestDefaultGlobalPullSecret(t *testing.T) {
	ctx := context.Background()
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	const flag = "--global-pull-secret="
	if arg := argWithPrefix(controllerArgs(t), flag); arg != "" {
		t.Fatalf("controller has %s without a pull secret", arg)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: v1beta1.DefaultGlobalPullSecretName},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"dTpw"}}}`)},
	}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	want := flag + testNamespace + "/" + v1beta1.DefaultGlobalPullSecretName
	eventually(t, 30*time.Second, "the controller gets the default pull secret", func() error {
		if got := argWithPrefix(controllerArgs(t), flag); got != want {
			return fmt.Errorf("controller pull-secret argument %q, want %q", got, want)
		}
		return nil
	})
	// The condition was already True with "no pull secret" before the Secret existed: wait for
	// the status written after the rollout, which may land after the Deployment's update.
	eventually(t, 30*time.Second, "LinkedObjectsExist says the default pull secret is used", func() error {
		linked := wantCondition(t, v1beta1.ConditionLinkedObjectsExist, metav1.ConditionTrue, v1beta1.ReasonAsExpected)
		if !strings.Contains(linked.Message, "default global pull secret") {
			return fmt.Errorf("LinkedObjectsExist message %q does not say the default pull secret is used", linked.Message)
		}
		return nil
	})
}

// controllerArgs are the controller Deployment's container arguments.
func controllerArgs(t *testing.T) []string {
	t.Helper()
	return getDeployment(t, operator.ControllerComponentName).Spec.Template.Spec.Containers[0].Args
}

func TestLinkedObjects(t *testing.T) {
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "registry-config"}}); err != nil {
		t.Fatal(err)
	}
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	if a := getDeployment(t, operator.ControllerComponentName).Spec.Template.Annotations; a[operator.AnnotationLinkedObjectsHash] != "" {
		t.Errorf("hash annotation %q without linked objects", a[operator.AnnotationLinkedObjectsHash])
	}

	// References to objects that do not exist: the condition says which, the rollout holds,
	// and the running components stay registered.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.GlobalPullSecretRef = &v1beta1.NamespacedObjectReference{Namespace: "registry-config", Name: "pull-secret"}
		c.Spec.CABundleConfigmapRef = &v1beta1.NamespacedObjectReference{Namespace: "registry-config", Name: "registry-ca"}
	})
	linked := wantCondition(t, v1beta1.ConditionLinkedObjectsExist, metav1.ConditionFalse, v1beta1.ReasonPullSecretNotFound)
	for _, want := range []string{"Secret registry-config/pull-secret named by spec.globalPullSecretRef does not exist",
		"ConfigMap registry-config/registry-ca named by spec.caBundleConfigmapRef does not exist"} {
		if !strings.Contains(linked.Message, want) {
			t.Errorf("LinkedObjectsExist message %q lacks %q", linked.Message, want)
		}
	}
	wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonPullSecretNotFound)
	wantCondition(t, v1beta1.ConditionProgressing, metav1.ConditionTrue, v1beta1.ReasonRollingOut)
	if err := webhookRegistered(); err != nil {
		t.Errorf("the webhook was unregistered while the components are available: %v", err)
	}

	// The objects appear: the controller gets the pull secret and the CA bundle, mounted from
	// the operator's copy.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "registry-config", Name: "pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"dTpw"}}}`)},
	}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, v1beta1.ConditionLinkedObjectsExist, metav1.ConditionFalse, v1beta1.ReasonCABundleNotFound)
	bundle := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "registry-config", Name: "registry-ca"},
		Data:       map[string]string{operator.CABundleKey: testCertPEM(t, "first")},
	}
	if err := k8s.Create(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, v1beta1.ConditionLinkedObjectsExist, metav1.ConditionTrue, v1beta1.ReasonAsExpected)
	var firstHash string
	eventually(t, 30*time.Second, "controller configured with the linked objects", func() error {
		d := getDeployment(t, operator.ControllerComponentName)
		spec := d.Spec.Template.Spec
		args := spec.Containers[0].Args
		if !containsArg(args, "--global-pull-secret=registry-config/pull-secret") ||
			!containsArg(args, "--ca-bundle="+operator.RegistryCADir+"/"+operator.CABundleKey) {
			return fmt.Errorf("args %q", args)
		}
		if firstHash = d.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]; firstHash == "" {
			return fmt.Errorf("no %s annotation", operator.AnnotationLinkedObjectsHash)
		}
		if v := spec.Volumes[len(spec.Volumes)-1]; v.ConfigMap == nil || v.ConfigMap.Name != operator.RegistryCABundleName {
			return fmt.Errorf("volumes %+v", spec.Volumes)
		}
		return nil
	})
	copied := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key(testNamespace, operator.RegistryCABundleName), copied); err != nil || copied.Data[operator.CABundleKey] != bundle.Data[operator.CABundleKey] {
		t.Fatalf("CA bundle copy %v (err %v)", copied.Data, err)
	}
	if env := getDeployment(t, operator.WebhookComponentName).Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]; env != "" {
		t.Error("the webhook, which never reads the linked objects, carries their hash")
	}

	// A change to either object rolls the controller (a new pod template).
	secret.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.example":{"auth":"dTpx"}}}`)
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	secondHash := waitHashChange(t, firstHash)
	bundle.Data[operator.CABundleKey] = testCertPEM(t, "second")
	if err := k8s.Update(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	waitHashChange(t, secondHash)
	eventually(t, 30*time.Second, "CA bundle copy updated", func() error {
		if err := k8s.Get(ctx, key(testNamespace, operator.RegistryCABundleName), copied); err != nil {
			return err
		}
		if copied.Data[operator.CABundleKey] != bundle.Data[operator.CABundleKey] {
			return fmt.Errorf("copy holds %q", copied.Data[operator.CABundleKey])
		}
		return nil
	})

	// Removing the references removes the copy and the arguments.
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.GlobalPullSecretRef, c.Spec.CABundleConfigmapRef = nil, nil
	})
	eventually(t, 30*time.Second, "linked objects unconfigured", func() error {
		d := getDeployment(t, operator.ControllerComponentName)
		if a := argWithPrefix(d.Spec.Template.Spec.Containers[0].Args, "--global-pull-secret"); a != "" {
			return fmt.Errorf("still %s", a)
		}
		if err := k8s.Get(ctx, key(testNamespace, operator.RegistryCABundleName), &corev1.ConfigMap{}); err == nil {
			return fmt.Errorf("CA bundle copy still there")
		}
		return nil
	})
}

func waitHashChange(t *testing.T, from string) string {
	t.Helper()
	var to string
	eventually(t, 30*time.Second, "controller pod template changed", func() error {
		to = getDeployment(t, operator.ControllerComponentName).Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]
		if to == from || to == "" {
			return fmt.Errorf("hash still %q", to)
		}
		return nil
	})
	return to
}
