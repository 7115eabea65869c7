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
	"strconv"
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

// hostFilesOf is what the controller's Deployment does with host files.
type hostFilesOf struct {
	// volumes are the hostPath volumes of type File, by host path; initMounts the init
	// containers' mounts of them, by host path.
	volumes    map[string]corev1.HostPathVolumeSource
	initMounts map[string]corev1.VolumeMount
	// copies are the controller's mounts of an emptyDir of medium Memory, by mount path;
	// hostMounts its mounts of hostPath File volumes (none wanted).
	copies     map[string]corev1.VolumeMount
	hostMounts []string
	initArgs   [][]string
	hash       string
}

// hostFileMounts reads the controller's Deployment's host file volumes and mounts.
func hostFileMounts(t *testing.T) hostFilesOf {
	t.Helper()
	d := getDeployment(t, operator.ControllerComponentName)
	spec := d.Spec.Template.Spec
	got := hostFilesOf{volumes: map[string]corev1.HostPathVolumeSource{}, initMounts: map[string]corev1.VolumeMount{},
		copies: map[string]corev1.VolumeMount{}, hash: d.Spec.Template.Annotations[operator.AnnotationLinkedObjectsHash]}
	hostFile, inMemory := map[string]string{}, map[string]bool{}
	for _, v := range spec.Volumes {
		switch {
		case v.HostPath != nil && ptr.Deref(v.HostPath.Type, "") == corev1.HostPathFile:
			got.volumes[v.HostPath.Path] = *v.HostPath
			hostFile[v.Name] = v.HostPath.Path
		case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
			inMemory[v.Name] = true
		}
	}
	for _, c := range spec.InitContainers {
		got.initArgs = append(got.initArgs, c.Args)
		for _, m := range c.VolumeMounts {
			if path, ok := hostFile[m.Name]; ok {
				got.initMounts[path] = m
			}
		}
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if inMemory[m.Name] {
			got.copies[m.MountPath] = m
		}
		if path, ok := hostFile[m.Name]; ok {
			got.hostMounts = append(got.hostMounts, path)
		}
	}
	return got
}

// TestCredentialProviderHostFiles: hostFiles set through the ClusterPodPlacementConfig are
// mounted read-only into the controller's init container, which copies them (the args the
// archgate binary takes) into a memory-backed emptyDir, whose copies the controller mounts
// read-only at the files' own paths without mounting the node; the change rolls the controller
// out (the linked-objects hash changes). Removed, all of it goes and the hash is the one before.
func TestCredentialProviderHostFiles(t *testing.T) {
	installCredentialProviders(t, "credential-provider-files", aksCredentialProviderConfig, "/var/lib/kubelet/credential-provider")
	without := hostFileMounts(t)
	before := without.hash
	if len(without.volumes) > 0 || len(without.initArgs) > 0 || before == "" {
		t.Fatalf("without hostFiles: host file volumes %v, init containers %v, hash %q", without.volumes, without.initArgs, before)
	}

	files := []v1beta1.HostFilePath{"/etc/kubernetes/azure.json", "/etc/kubernetes/akscustom.json"}
	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) {
		c.Spec.ImageInspection.CredentialProviders.HostFiles = files
	})
	eventually(t, 30*time.Second, "the controller mounting copies of the host files", func() error {
		got := hostFileMounts(t)
		var paths []string
		for i, f := range files {
			path := string(f)
			paths = append(paths, path)
			if diff := cmp.Diff(corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathFile)}, got.volumes[path]); diff != "" {
				return fmt.Errorf("volume of %s (-want +got):\n%s", path, diff)
			}
			if m := got.initMounts[path]; m.MountPath != fmt.Sprintf("%s/%d", operator.HostFilesDir, i) || !m.ReadOnly {
				return fmt.Errorf("init container's mount of %s: %+v, want read-only at %s/%d", path, m, operator.HostFilesDir, i)
			}
			if m := got.copies[path]; m.SubPath != strconv.Itoa(i) || !m.ReadOnly {
				return fmt.Errorf("controller's mount at %s: %+v, want copy %d read-only", path, m, i)
			}
		}
		if len(got.hostMounts) > 0 {
			return fmt.Errorf("the controller mounts host files %v itself", got.hostMounts)
		}
		if diff := cmp.Diff([][]string{operator.CopyHostFilesArgs(paths)}, got.initArgs); diff != "" {
			return fmt.Errorf("init containers' args (-want +got):\n%s", diff)
		}
		if got.hash == before {
			return fmt.Errorf("linked-objects hash %q unchanged: the controller is not rolled out", got.hash)
		}
		return nil
	})

	updateCluster(t, func(c *v1beta1.ClusterPodPlacementConfig) { c.Spec.ImageInspection.CredentialProviders.HostFiles = nil })
	eventually(t, 30*time.Second, "the controller without the host files", func() error {
		got := hostFileMounts(t)
		if len(got.volumes) > 0 || len(got.copies) > 0 || len(got.initArgs) > 0 || got.hash != before {
			return fmt.Errorf("host file volumes %v, copies %v, init containers %v, hash %q (want none and %q)", got.volumes, got.copies, got.initArgs, got.hash, before)
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
