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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// installCredentialProviders creates namespace ns with the ConfigMap "kubelet-credential-providers"
// holding config, and installs a ClusterPodPlacementConfig whose credential providers use it
// with hostBinDir.
func installCredentialProviders(t *testing.T, ns, config, hostBinDir string) *corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubelet-credential-providers"},
		Data:       map[string]string{v1beta1.CredentialProvidersConfigKey: config},
	}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	install(t, v1beta1.ClusterPodPlacementConfigSpec{ImageInspection: &v1beta1.ImageInspection{
		CredentialProviders: &v1beta1.CredentialProviders{
			ConfigConfigmapRef: v1beta1.NamespacedObjectReference{Namespace: ns, Name: cm.Name},
			HostBinDir:         hostBinDir,
		},
	}})
	return cm
}

// TestCredentialProviders: the CredentialProviderConfig is validated, copied next to the
// controller and mounted with the nodes' plugin directory; a broken one holds the rollout with
// Degraded naming the object and the error.
func TestCredentialProviders(t *testing.T) {
	ctx := context.Background()
	cm := installCredentialProviders(t, "credential-providers", credentialProviderConfig, "/etc/eks/image-credential-provider")

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

// aksCredentialProviderConfig is shaped like the CredentialProviderConfig of AKS nodes: the
// plugin's one argument is the host file it reads its credentials from.
const aksCredentialProviderConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: acr-credential-provider
  matchImages: ["*.azurecr.io", "*.azurecr.cn", "*.azurecr.de", "*.azurecr.us"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [/etc/kubernetes/azure.json]
`

// hostFileMounts returns the controller's host file volumes (hostPath of type File) and
// their mounts, by path.
func hostFileMounts(t *testing.T) (map[string]corev1.HostPathVolumeSource, map[string]corev1.VolumeMount, string) {
	t.Helper()
	d := getDeployment(t, operator.ControllerComponentName)
	spec := d.Spec.Template.Spec
	volumes, mounts := map[string]corev1.HostPathVolumeSource{}, map[string]corev1.VolumeMount{}
	byName := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathFile {
			volumes[v.HostPath.Path] = *v.HostPath
			byName[v.Name] = v.HostPath.Path
		}
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if path, ok := byName[m.Name]; ok {
			mounts[path] = m
		}
	}
	return volumes, mounts, d.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]
}

// TestCredentialProviderHostFiles: hostFiles set through the ClusterPodPlacementConfig are
// mounted read-only into the controller at their own paths and roll it out (the linked-objects
// hash changes); removed, they are unmounted and the hash is the one before.
func TestCredentialProviderHostFiles(t *testing.T) {
	installCredentialProviders(t, "credential-provider-files", aksCredentialProviderConfig, "/var/lib/kubelet/credential-provider")
	volumes, _, before := hostFileMounts(t)
	if len(volumes) > 0 || before == "" {
		t.Fatalf("without hostFiles: host file volumes %v, hash %q", volumes, before)
	}

	files := []v1beta1.HostFilePath{"/etc/kubernetes/azure.json", "/etc/kubernetes/akscustom.json"}
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.ImageInspection.CredentialProviders.HostFiles = files
	})
	eventually(t, 30*time.Second, "the controller mounting the host files", func() error {
		volumes, mounts, hash := hostFileMounts(t)
		for _, f := range files {
			path := string(f)
			if diff := cmp.Diff(corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathFile)}, volumes[path]); diff != "" {
				return fmt.Errorf("volume of %s (-want +got):\n%s", path, diff)
			}
			if m := mounts[path]; m.MountPath != path || !m.ReadOnly {
				return fmt.Errorf("mount of %s: %+v, want read-only at the same path", path, m)
			}
		}
		if hash == before {
			return fmt.Errorf("linked-objects hash %q unchanged: the controller is not rolled out", hash)
		}
		return nil
	})

	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.ImageInspection.CredentialProviders.HostFiles = nil })
	eventually(t, 30*time.Second, "the controller without the host files", func() error {
		volumes, mounts, hash := hostFileMounts(t)
		if len(volumes) > 0 || len(mounts) > 0 || hash != before {
			return fmt.Errorf("host file volumes %v, mounts %v, hash %q (want none and %q)", volumes, mounts, hash, before)
		}
		return nil
	})
}

// TestHostFilesValidationThroughAPIServer: the apiserver refuses a hostFiles list the CRD's
// rules refuse, saying which path and why.
func TestHostFilesValidationThroughAPIServer(t *testing.T) {
	tests := map[string]struct {
		files     []v1beta1.HostFilePath
		wantError string // "" admits
	}{
		"AKS's azure.json": {files: []v1beta1.HostFilePath{"/etc/kubernetes/azure.json"}},
		"relative": {files: []v1beta1.HostFilePath{"etc/kubernetes/azure.json"},
			wantError: "host file etc/kubernetes/azure.json must be an absolute path"},
		"..": {files: []v1beta1.HostFilePath{"/etc/kubernetes/../shadow"},
			wantError: "host file /etc/kubernetes/../shadow must not have .. elements"},
		"a . element that would hide a reserved directory": {files: []v1beta1.HostFilePath{"/etc/./archgate/x"},
			wantError: "host file /etc/./archgate/x must be a clean path naming a file"},
		"the ServiceAccount token": {files: []v1beta1.HostFilePath{"/var/run/secrets/kubernetes.io/serviceaccount/token"},
			wantError: "host file /var/run/secrets/kubernetes.io/serviceaccount/token is reserved"},
		"the controller's own directory": {files: []v1beta1.HostFilePath{"/var/lib/archgate/credential-provider-bin/x"},
			wantError: "host file /var/lib/archgate/credential-provider-bin/x is reserved"},
		"/proc": {files: []v1beta1.HostFilePath{"/proc/self/environ"}, wantError: "host file /proc/self/environ is reserved"},
		"more than 8": {files: []v1beta1.HostFilePath{"/a/1", "/a/2", "/a/3", "/a/4", "/a/5", "/a/6", "/a/7", "/a/8", "/a/9"},
			wantError: "spec.imageInspection.credentialProviders.hostFiles: Too many: 9: must have at most 8 items"},
		"twice": {files: []v1beta1.HostFilePath{"/a/1", "/a/1"},
			wantError: `spec.imageInspection.credentialProviders.hostFiles[1]: Duplicate value: "/a/1"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cppc := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName},
				Spec: v1beta1.ClusterPodPlacementConfigSpec{ImageInspection: &v1beta1.ImageInspection{
					CredentialProviders: &v1beta1.CredentialProviders{
						ConfigConfigmapRef: v1beta1.NamespacedObjectReference{Name: "kubelet-credential-providers"},
						HostBinDir:         "/var/lib/kubelet/credential-provider",
						HostFiles:          tc.files,
					}}}}
			err := k8s.Create(context.Background(), cppc, client.DryRunAll)
			switch {
			case tc.wantError == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantError == "":
			case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantError):
				t.Fatalf("error %v, want Invalid containing %q", err, tc.wantError)
			case !strings.Contains(err.Error(), `ClusterPodPlacementConfig.multiarch.openshift.io "cluster" is invalid`):
				t.Errorf("error %q does not name the object", err)
			}
			if err != nil {
				t.Logf("user sees: %v", err)
			}
		})
	}
}
