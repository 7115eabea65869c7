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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

const credentialProviderConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: ecr-credential-provider
  matchImages: ["*.dkr.ecr.*.amazonaws.com"]
  defaultCacheDuration: 12h
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`

// TestCredentialProviders: the CredentialProviderConfig is validated, copied next to the
// controller and mounted with the nodes' plugin directory; a broken one holds the rollout with
// Degraded naming the object and the error.
func TestCredentialProviders(t *testing.T) {
	ctx := context.Background()
	const ns = "credential-providers"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubelet-credential-providers"},
		Data:       map[string]string{v1beta1.CredentialProvidersConfigKey: credentialProviderConfig},
	}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	install(t, v1beta1.ClusterPodPlacementConfigSpec{ImageInspection: &v1beta1.ImageInspection{
		CredentialProviders: &v1beta1.CredentialProviders{
			ConfigConfigmapRef: v1beta1.NamespacedObjectReference{Namespace: ns, Name: cm.Name},
			HostBinDir:         "/etc/eks/image-credential-provider",
		},
	}})

	d := getDeployment(t, operator.ControllerComponentName)
	spec := d.Spec.Template.Spec
	for _, want := range []string{
		"--image-credential-provider-config=" + operator.CredentialProvidersDir + "/config.yaml",
		"--image-credential-provider-bin-dir=" + operator.CredentialProviderBinDir,
	} {
		if !containsArg(spec.Containers[0].Args, want) {
			t.Errorf("controller args %q lack %q", spec.Containers[0].Args, want)
		}
	}
	hostPath := ""
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPath = v.HostPath.Path
		}
	}
	if hostPath != "/etc/eks/image-credential-provider" {
		t.Errorf("hostPath volume %q, want the nodes' plugin directory", hostPath)
	}
	copied := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key(testNamespace, operator.CredentialProvidersName), copied); err != nil {
		t.Fatal(err)
	}
	if copied.Data[v1beta1.CredentialProvidersConfigKey] != credentialProviderConfig {
		t.Errorf("copy holds %q", copied.Data)
	}
	goodHash := d.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]

	cm.Data[v1beta1.CredentialProvidersConfigKey] = strings.Replace(credentialProviderConfig, "  defaultCacheDuration: 12h\n", "", 1)
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	c := wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionTrue, v1beta1.ReasonRegistryConfigInvalid)
	want := `ConfigMap credential-providers/kubelet-credential-providers named by spec.imageInspection.credentialProviders.configConfigmapRef, key "config.yaml": providers[0] (ecr-credential-provider): defaultCacheDuration: required`
	if !strings.Contains(c.Message, want) {
		t.Errorf("Degraded message %q lacks %q", c.Message, want)
	}
	if h := getDeployment(t, operator.ControllerComponentName).Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]; h != goodHash {
		t.Errorf("the controller was rolled with the broken configuration (hash %q, was %q)", h, goodHash)
	}
	cm.Data[v1beta1.CredentialProvidersConfigKey] = credentialProviderConfig
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, v1beta1.ConditionDegraded, metav1.ConditionFalse, v1beta1.ReasonAsExpected)
}
