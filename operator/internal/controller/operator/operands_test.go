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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/ownimage"
	"github.com/archgate/archgate/operator/internal/webhook"
)

func params() operandParams {
	return operandParams{namespace: "archgate-system", image: "registry.example/archgate:1", provider: certs.ProviderSelfSigned, args: DefaultArgs}
}

func TestDefaultArgs(t *testing.T) {
	tests := map[string]struct {
		component string
		p         func(*operandParams)
		// local renders a local component of namespace "team".
		local bool
		want  []string
	}{
		"local controller: its namespace and the cluster-wide verbosity only": {
			component: "controller", local: true,
			p: func(p *operandParams) {
				p.verbosity = v1beta1.LogVerbosityDebug
				p.pullSecret = &types.NamespacedName{Namespace: "openshift-config", Name: "pull-secret"}
			},
			want: []string{"controller", "--log-verbosity=Debug", "--namespace=team", "--metrics-bind-address=0", "--health-probe-bind-address=:8081"},
		},
		"local webhook": {
			component: "webhook", local: true,
			want: []string{"webhook", "--log-verbosity=Normal", "--namespace=team", "--metrics-bind-address=0",
				"--health-probe-bind-address=:8081", "--cert-dir=" + ServingCertDir, "--port=9443"},
		},
		"webhook": {
			component: "webhook",
			want: []string{"webhook", "--log-verbosity=Normal", "--operator-namespace=archgate-system", "--metrics-bind-address=:8443",
				"--health-probe-bind-address=:8081", "--metrics-cert-dir=" + MetricsCertDir, "--cert-dir=" + ServingCertDir, "--port=9443"},
		},
		"controller with everything": {
			component: "controller",
			p: func(p *operandParams) {
				p.verbosity = v1beta1.LogVerbosityTraceAll
				p.pullSecret = &types.NamespacedName{Namespace: "openshift-config", Name: "pull-secret"}
				p.caBundle = true
				p.inspection = &v1beta1.ImageInspectionSettings{CacheSize: 0, CacheTTL: 90 * time.Second, Timeout: 45 * time.Second, MaxRetries: 8, FailureCacheTTL: 20 * time.Second,
					MaxGateAge: 90 * time.Minute, MaxImagesPerPod: 12, BlockedNetworks: []string{"169.254.0.0/16", "10.96.0.0/12"},
					AllowedRegistries: []string{"quay.io", "*.corp.example"}}
				p.execFormatErrorMonitor = true
				p.execFormatErrorDeleteInterval = 15 * time.Minute
			},
			want: []string{"controller", "--log-verbosity=TraceAll", "--operator-namespace=archgate-system", "--metrics-bind-address=:8443",
				"--health-probe-bind-address=:8081", "--metrics-cert-dir=" + MetricsCertDir, "--leader-elect", "--global-pull-secret=openshift-config/pull-secret",
				"--ca-bundle=" + RegistryCADir + "/" + CABundleKey,
				"--cache-size=0", "--cache-ttl=1m30s", "--inspect-timeout=45s", "--max-retries=8", "--failure-cache-ttl=20s",
				"--max-gate-age=1h30m0s", "--max-images-per-pod=12", "--blocked-networks=169.254.0.0/16,10.96.0.0/12",
				"--allowed-registries=quay.io,*.corp.example", "--exec-format-error-monitor", "--exec-format-error-delete-interval=15m0s"},
		},
		"controller with a registries.conf and per-registry certificates": {
			component: "controller",
			p: func(p *operandParams) {
				p.registriesConf = true
				p.registryCerts = []string{"registry.example..5000"}
			},
			want: []string{"controller", "--log-verbosity=Normal", "--operator-namespace=archgate-system", "--metrics-bind-address=:8443",
				"--health-probe-bind-address=:8081", "--metrics-cert-dir=" + MetricsCertDir, "--leader-elect",
				"--registries-conf=" + RegistriesConfDir + "/registries.conf", "--certs-dir=" + CertsDir},
		},
		"controller with credential provider plugins": {
			component: "controller",
			p:         func(p *operandParams) { p.credentialProvidersHostBinDir = "/etc/eks/image-credential-provider" },
			want: []string{"controller", "--log-verbosity=Normal", "--operator-namespace=archgate-system", "--metrics-bind-address=:8443",
				"--health-probe-bind-address=:8081", "--metrics-cert-dir=" + MetricsCertDir, "--leader-elect",
				"--image-credential-provider-config=" + CredentialProvidersDir + "/config.yaml",
				"--image-credential-provider-bin-dir=" + CredentialProviderBinDir},
		},
		"controller with the default settings": {
			component: "controller",
			p:         func(p *operandParams) { p.inspection = ptr.To(v1beta1.DefaultImageInspectionSettings()) },
			want: []string{"controller", "--log-verbosity=Normal", "--operator-namespace=archgate-system", "--metrics-bind-address=:8443",
				"--health-probe-bind-address=:8081", "--metrics-cert-dir=" + MetricsCertDir, "--leader-elect",
				"--cache-size=4096", "--cache-ttl=10m0s", "--inspect-timeout=30s", "--max-retries=9", "--failure-cache-ttl=10s", "--max-gate-age=10m0s",
				"--max-images-per-pod=64", "--blocked-networks=127.0.0.0/8,::1/128,169.254.0.0/16,fe80::/10",
				"--allowed-registries="},
		},
		"webhook with the settings": {
			component: "webhook",
			p:         func(p *operandParams) { p.inspection = &v1beta1.ImageInspectionSettings{MaxImagesPerPod: 12} },
			want: []string{"webhook", "--log-verbosity=Normal", "--operator-namespace=archgate-system", "--metrics-bind-address=:8443",
				"--health-probe-bind-address=:8081", "--metrics-cert-dir=" + MetricsCertDir, "--cert-dir=" + ServingCertDir, "--port=9443", "--max-images-per-pod=12"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := params()
			if tc.p != nil {
				tc.p(&p)
			}
			args := p.componentArgs()
			if tc.local {
				args = localParams(p, "team").localArgs()
			}
			if diff := cmp.Diff(tc.want, DefaultArgs(tc.component, args)); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeploymentsAreRestricted(t *testing.T) {
	p := params()
	p.caBundle, p.linkedHash = true, "abc"
	for _, d := range []struct {
		name     string
		replicas int32
		spec     corev1.PodSpec
	}{
		{WebhookComponentName, 3, typed[appsv1.Deployment](t, webhookDeployment(p)).Spec.Template.Spec},
		{ControllerComponentName, 2, typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec},
	} {
		t.Run(d.name, func(t *testing.T) {
			psc := d.spec.SecurityContext
			if !*psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v", psc)
			}
			c := d.spec.Containers[0]
			sc := c.SecurityContext
			if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("container security context %+v", sc)
			}
			if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.Image != p.image || d.spec.ServiceAccountName != d.name {
				t.Errorf("probes, image or service account missing: %+v", c)
			}
		})
	}
	ctl := typed[appsv1.Deployment](t, controllerDeployment(p))
	if ctl.Spec.Template.Annotations[AnnotationLinkedObjectsHash] != "abc" {
		t.Error("linked-objects hash missing on the controller's pod template")
	}
	if wh := typed[appsv1.Deployment](t, webhookDeployment(p)); wh.Spec.Template.Annotations[AnnotationLinkedObjectsHash] != "" {
		t.Error("the webhook's pod template carries the linked-objects hash")
	}
}

// clusterRoleVerbs maps "group/resource" to the verbs of the ClusterRole's rules.
func clusterRoleVerbs(t *testing.T, role *rbacv1ac.ClusterRoleApplyConfiguration) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for _, r := range typed[rbacv1.ClusterRole](t, role).Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	return got
}

func TestControllerRoleWithExecFormatErrorMonitor(t *testing.T) {
	p := params()
	if verbs, ok := clusterRoleVerbs(t, controllerClusterRole(p))["/nodes"]; ok {
		t.Errorf("nodes %v granted without the monitor", verbs)
	}
	p.execFormatErrorMonitor = true
	if diff := cmp.Diff([]string{"get", "list", "watch"}, clusterRoleVerbs(t, controllerClusterRole(p))["/nodes"]); diff != "" {
		t.Errorf("nodes verbs with the monitor (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"get", "list", "watch", "patch"}, clusterRoleVerbs(t, controllerClusterRole(p))["/pods"]); diff != "" {
		t.Errorf("pods verbs with the monitor reporting only (-want +got):\n%s", diff)
	}
	p.execFormatErrorDeleteInterval = 10 * time.Minute
	if diff := cmp.Diff([]string{"get", "list", "watch", "patch"}, clusterRoleVerbs(t, controllerClusterRole(p))["/pods"]); diff != "" {
		t.Errorf("pods verbs with the monitor's action DeletePod, which a role of its own grants (-want +got):\n%s", diff)
	}
	binding := typed[rbacv1.ClusterRoleBinding](t, controllerPodDeleterBinding(p))
	if binding.RoleRef.Name != ControllerPodDeleterName || len(binding.Subjects) != 1 || binding.Subjects[0].Name != ControllerComponentName {
		t.Errorf("pod-deleter binding %+v, want the role %s bound to the controller", binding, ControllerPodDeleterName)
	}
}

func TestControllerRoleIsLeastPrivilege(t *testing.T) {
	got := clusterRoleVerbs(t, controllerClusterRole(params()))
	want := map[string][]string{
		"/pods":                {"get", "list", "watch", "patch"},
		"/secrets":             {"get"},
		"/events":              {"create", "patch"},
		"events.k8s.io/events": {"create", "patch"},
		"multiarch.openshift.io/clusterpodplacementconfigs": {"get", "list", "watch"},
		"multiarch.openshift.io/podplacementconfigs":        {"get", "list", "watch"},
		"authentication.k8s.io/tokenreviews":                {"create"},
		"authorization.k8s.io/subjectaccessreviews":         {"create"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("controller ClusterRole (-want +got):\n%s", diff)
	}
	wantRole := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{KnownImagesName}, Verbs: []string{"patch"}},
	}
	if diff := cmp.Diff(wantRole, typed[rbacv1.Role](t, controllerRole(params())).Rules); diff != "" {
		t.Errorf("controller Role (-want +got):\n%s", diff)
	}
}

// typed decodes an apply configuration into its API type, for assertions.
func typed[T any](t *testing.T, ac any) *T {
	t.Helper()
	raw, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyConfigurationsClaimOnlyWhatTheySet: what the operator applies holds no status, no
// server-set metadata and no empty value it never meant to set (the typed-to-unstructured
// conversion it replaced sent "strategy": {} and "creationTimestamp": null).
func TestApplyConfigurationsClaimOnlyWhatTheySet(t *testing.T) {
	mwc, err := mutatingWebhookApplyConfiguration(webhook.Configuration(webhook.ConfigurationOptions{
		Name:         DefaultMutatingWebhookConfigurationName,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	for name, ac := range map[string]any{
		"webhook Deployment":           webhookDeployment(params()),
		"controller Deployment":        controllerDeployment(params()),
		"Service":                      webhookService(params()),
		"MutatingWebhookConfiguration": mwc,
	} {
		raw, err := json.Marshal(ac)
		if err != nil {
			t.Fatal(err)
		}
		// The empty values set on purpose: an emptyDir volume and "every object" selector.
		sent := strings.NewReplacer(`"emptyDir":{}`, "", `"objectSelector":{}`, "").Replace(string(raw))
		for _, unwanted := range []string{`"status"`, `"creationTimestamp"`, `"strategy"`, `:{}`, `:null`, `"resourceVersion"`} {
			if strings.Contains(sent, unwanted) {
				t.Errorf("%s: the apply configuration holds %s: %s", name, unwanted, raw)
			}
		}
	}
}

func TestControllerDeploymentMountsRegistryConfiguration(t *testing.T) {
	p := params()
	p.registriesConf = true
	p.mirrorSets = true
	p.registryCerts = []string{"10.0.0.1..5000", "registry.example"}
	p.proxyEnv = []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy.example:3128"}}
	spec := typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec
	for _, want := range []string{"--registries-conf=" + RegistriesConfDir + "/registries.conf", "--registries-conf-dir=" + RegistriesConfDropInDir} {
		if !slices.Contains(spec.Containers[0].Args, want) {
			t.Errorf("controller args %v lack %s", spec.Containers[0].Args, want)
		}
	}
	volumes := map[string]*corev1.ConfigMapVolumeSource{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v.ConfigMap
	}
	// One ConfigMap, two directories: the drop-in must not sit beside registries.conf, nor
	// registries.conf among the drop-ins.
	for volume, key := range map[string]string{"registries-conf": RegistriesConfKey, "mirror-sets": MirrorSetsKey} {
		if v := volumes[volume]; v == nil || v.Name != RegistriesConfName || !cmp.Equal(v.Items, []corev1.KeyToPath{{Key: key, Path: key}}) {
			t.Errorf("%s volume %+v, want ConfigMap %s, key %s alone", volume, v, RegistriesConfName, key)
		}
	}
	wantItems := []corev1.KeyToPath{{Key: "10.0.0.1..5000", Path: "10.0.0.1:5000/ca.crt"}, {Key: "registry.example", Path: "registry.example/ca.crt"}}
	if v := volumes["registry-certs"]; v == nil || v.Name != RegistryCertsName || !cmp.Equal(v.Items, wantItems) {
		t.Errorf("registry-certs volume %+v, want ConfigMap %s with items %v", v, RegistryCertsName, wantItems)
	}
	mounts := map[string]string{}
	for _, m := range spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["registries-conf"] != RegistriesConfDir || mounts["mirror-sets"] != RegistriesConfDropInDir || mounts["registry-certs"] != CertsDir {
		t.Errorf("mounts %v", mounts)
	}
	for _, d := range []*corev1.PodSpec{&spec, &typed[appsv1.Deployment](t, webhookDeployment(p)).Spec.Template.Spec} {
		if !slices.Contains(d.Containers[0].Env, p.proxyEnv[0]) {
			t.Errorf("container %s env %v lacks %v", d.Containers[0].Name, d.Containers[0].Env, p.proxyEnv[0])
		}
	}
}

func TestControllerDeploymentMountsCredentialProviders(t *testing.T) {
	p := params()
	if spec := typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec; slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil }) {
		t.Fatalf("a hostPath volume without credential providers: %+v", spec.Volumes)
	}
	p.credentialProvidersHostBinDir = "/etc/eks/image-credential-provider"
	spec := typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec
	volumes := map[string]corev1.VolumeSource{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v.VolumeSource
	}
	if v := volumes["credential-providers"].ConfigMap; v == nil || v.Name != CredentialProvidersName {
		t.Errorf("credential-providers volume %+v, want ConfigMap %s", v, CredentialProvidersName)
	}
	want := &corev1.HostPathVolumeSource{Path: "/etc/eks/image-credential-provider", Type: ptr.To(corev1.HostPathDirectory)}
	if v := volumes["credential-provider-bin"].HostPath; !cmp.Equal(v, want) {
		t.Errorf("credential-provider-bin volume %+v, want hostPath %+v", v, want)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m
	}
	if m := mounts["credential-providers"]; m.MountPath != CredentialProvidersDir || !m.ReadOnly {
		t.Errorf("credential-providers mount %+v", m)
	}
	if m := mounts["credential-provider-bin"]; m.MountPath != CredentialProviderBinDir || !m.ReadOnly {
		t.Errorf("credential-provider-bin mount %+v", m)
	}
}

// TestControllerDeploymentMountsHostFiles: each credentialProviders.hostFiles entry is a
// read-only hostPath of type File mounted into the init container only, and the controller
// mounts its copy from the memory-backed emptyDir read-only at the file's own path, only with
// credential providers configured.
func TestControllerDeploymentMountsHostFiles(t *testing.T) {
	files := []string{"/etc/kubernetes/azure.json", "/etc/kubernetes/custom-cloud.json"}
	hostFile := func(i, path string) corev1.Volume {
		return corev1.Volume{Name: "credential-provider-file-" + i, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: path, Type: ptr.To(corev1.HostPathFile)}}}
	}
	tests := map[string]struct {
		hostBinDir                              string
		wantVolumes                             []corev1.Volume
		wantInitMounts, wantControllerMounts    []corev1.VolumeMount
		wantControllerUser, wantControllerGroup *int64
	}{
		"with credential providers": {
			hostBinDir: "/var/lib/kubelet/credential-provider",
			wantVolumes: []corev1.Volume{
				hostFile("0", "/etc/kubernetes/azure.json"),
				hostFile("1", "/etc/kubernetes/custom-cloud.json"),
				{Name: "credential-provider-files", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi"))}}},
			},
			wantInitMounts: []corev1.VolumeMount{
				{Name: "credential-provider-files", MountPath: "/var/run/archgate/host-files"},
				{Name: "credential-provider-file-0", MountPath: "/var/lib/archgate/host-files/0", ReadOnly: true},
				{Name: "credential-provider-file-1", MountPath: "/var/lib/archgate/host-files/1", ReadOnly: true},
			},
			wantControllerMounts: []corev1.VolumeMount{
				{Name: "credential-provider-files", MountPath: "/etc/kubernetes/azure.json", SubPath: "0", ReadOnly: true},
				{Name: "credential-provider-files", MountPath: "/etc/kubernetes/custom-cloud.json", SubPath: "1", ReadOnly: true},
			},
			wantControllerUser: ptr.To[int64](65532), wantControllerGroup: ptr.To[int64](65532),
		},
		"without credential providers the files are not mounted": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := params()
			p.credentialProvidersHostBinDir = tc.hostBinDir
			p.credentialProvidersHostFiles = files
			spec := typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec
			isHostFile := func(name string) bool { return strings.HasPrefix(name, "credential-provider-file") }
			var gotVolumes []corev1.Volume
			for _, v := range spec.Volumes {
				if isHostFile(v.Name) {
					gotVolumes = append(gotVolumes, v)
				}
			}
			var gotControllerMounts, gotInitMounts []corev1.VolumeMount
			for _, m := range spec.Containers[0].VolumeMounts {
				if isHostFile(m.Name) {
					gotControllerMounts = append(gotControllerMounts, m)
				}
			}
			for _, c := range spec.InitContainers {
				gotInitMounts = append(gotInitMounts, c.VolumeMounts...)
			}
			if diff := cmp.Diff(tc.wantVolumes, gotVolumes); diff != "" {
				t.Errorf("host file volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantInitMounts, gotInitMounts); diff != "" {
				t.Errorf("init container mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantControllerMounts, gotControllerMounts); diff != "" {
				t.Errorf("controller's host file mounts (-want +got):\n%s", diff)
			}
			sc := spec.Containers[0].SecurityContext
			if diff := cmp.Diff([]*int64{tc.wantControllerUser, tc.wantControllerGroup}, []*int64{sc.RunAsUser, sc.RunAsGroup}); diff != "" {
				t.Errorf("controller's runAsUser, runAsGroup (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostFilesInitContainer: the init container that copies the host files runs the archgate
// image's copy-host-files with the files by index, for the controller's user, as root with
// only CHOWN and DAC_READ_SEARCH, a read-only root filesystem and no privilege escalation; the
// controller keeps its restricted context (no capabilities) and the pod's runAsNonRoot.
func TestHostFilesInitContainer(t *testing.T) {
	p := params()
	p.credentialProvidersHostBinDir = "/var/lib/kubelet/credential-provider"
	p.credentialProvidersHostFiles = []string{"/etc/kubernetes/azure.json", "/etc/kubernetes/custom-cloud.json"}
	spec := typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec
	if len(spec.InitContainers) != 1 {
		t.Fatalf("%d init containers, want 1", len(spec.InitContainers))
	}
	got := spec.InitContainers[0]
	want := corev1.Container{
		Name:  "copy-host-files",
		Image: "registry.example/archgate:1",
		Args: []string{"copy-host-files", "--from-dir=/var/lib/archgate/host-files", "--to=/var/run/archgate/host-files", "--owner=65532:65532",
			"--file=0=/etc/kubernetes/azure.json", "--file=1=/etc/kubernetes/custom-cloud.json"},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false),
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN", "DAC_READ_SEARCH"}},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(corev1.Container{}, "VolumeMounts", "Resources")); diff != "" {
		t.Errorf("init container (-want +got):\n%s", diff)
	}
	if got.Resources.Limits.Memory().IsZero() {
		t.Errorf("init container without a memory limit: %+v", got.Resources)
	}
	controller := spec.Containers[0].SecurityContext
	if diff := cmp.Diff(&corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, controller.Capabilities); diff != "" {
		t.Errorf("controller's capabilities (-want +got):\n%s", diff)
	}
	if !ptr.Deref(spec.SecurityContext.RunAsNonRoot, false) || controller.RunAsNonRoot != nil {
		t.Errorf("pod runAsNonRoot %v, controller's %v: want the pod's true, the controller's unset", spec.SecurityContext.RunAsNonRoot, controller.RunAsNonRoot)
	}
}

// TestControllerUserIsTheImages: the user the host file copies are given to is the one the
// image runs as.
func TestControllerUserIsTheImages(t *testing.T) {
	if got := fmt.Sprintf("%d:%d", ControllerUID, ControllerGID); got != ownimage.NonRootUser {
		t.Errorf("ControllerUID:ControllerGID = %s, the image's user %s", got, ownimage.NonRootUser)
	}
}

// TestHostFilesAvoidOwnMounts: every directory a rendered component mounts, and every path the
// kubelet mounts into its containers, is among the paths credentialProviders.hostFiles may not
// use (v1beta1.ReservedHostPaths, the list of the CRD's rule, which crd_test.go checks), so that
// a host file can neither shadow a component's own files nor be shadowed by them. A new mount
// directory fails this test until it is reserved.
func TestHostFilesAvoidOwnMounts(t *testing.T) {
	p := params()
	p.pullSecret = &types.NamespacedName{Namespace: "openshift-config", Name: "pull-secret"}
	p.caBundle, p.registriesConf, p.registryCerts = true, true, []string{"registry.example"}
	p.mirrorCredentials = "mirror-credentials"
	p.credentialProvidersHostBinDir = "/var/lib/kubelet/credential-provider"
	p.credentialProvidersHostFiles = []string{"/etc/kubernetes/azure.json"}
	local := localParams(p, "team")
	deployments := map[string]*appsv1.Deployment{
		"controller":       typed[appsv1.Deployment](t, controllerDeployment(p)),
		"webhook":          typed[appsv1.Deployment](t, webhookDeployment(p)),
		"local controller": typed[appsv1.Deployment](t, localControllerDeployment(local)),
		"local webhook":    typed[appsv1.Deployment](t, localWebhookDeployment(local)),
	}
	// What the kubelet adds to every container: the ServiceAccount token, the termination
	// log, the name service files.
	kubelet := []string{"/var/run/secrets/kubernetes.io/serviceaccount", corev1.TerminationMessagePathDefault,
		"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}
	reserved := func(path string) bool {
		return slices.ContainsFunc(v1beta1.ReservedHostPaths(), func(r string) bool { return path == r || strings.HasPrefix(path, r+"/") })
	}
	for _, path := range kubelet {
		if !reserved(path) {
			t.Errorf("the kubelet mounts %s into every container, which v1beta1.ReservedHostPaths does not reserve", path)
		}
	}
	for name, d := range deployments {
		spec := d.Spec.Template.Spec
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			for _, m := range c.VolumeMounts {
				if slices.Contains(p.credentialProvidersHostFiles, m.MountPath) {
					continue // the host file itself
				}
				if !reserved(m.MountPath) {
					t.Errorf("%s container %s mounts %s (volume %s), which v1beta1.ReservedHostPaths and the CRD's hostFiles rule do not reserve",
						name, c.Name, m.MountPath, m.Name)
				}
			}
		}
	}
}

func TestCertsDirHost(t *testing.T) {
	tests := map[string]struct {
		want, wantErr string
	}{
		"registry.example":       {want: "registry.example"},
		"registry.example..5000": {want: "registry.example:5000"},
		"10.0.0.1..443":          {want: "10.0.0.1:443"},
		"localhost":              {want: "localhost"},
		"registry.example..0":    {wantErr: `port "0" is not a number within [1, 65535]`},
		"registry.example..http": {wantErr: `port "http" is not a number`},
		"Registry_Example":       {wantErr: `want a registry host`},
		"registry.example/team":  {wantErr: `want a registry host`},
		"":                       {wantErr: `want a registry host`},
	}
	for key, tc := range tests {
		t.Run(key, func(t *testing.T) {
			got, err := certsDirHost(key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("certsDirHost(%q) = %q, %v; want an error containing %q", key, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("certsDirHost(%q) = %q, %v; want %q", key, got, err, tc.want)
			}
		})
	}
}

func TestProxyEnv(t *testing.T) {
	env := map[string]string{"HTTPS_PROXY": "http://proxy:3128", "no_proxy": ".svc", "HOME": "/root", "NO_PROXY": ""}
	got := ProxyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	want := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "NO_PROXY", Value: ""}, {Name: "no_proxy", Value: ".svc"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ProxyEnv (-want +got):\n%s", diff)
	}
	if got := ProxyEnv(func(string) (string, bool) { return "", false }); got != nil {
		t.Errorf("ProxyEnv without proxy variables = %v, want nil", got)
	}
}

// TestWebhookDrains: a terminating webhook replica keeps serving through endpoint propagation
// (preStop sleep), and the grace period outlasts the sleep plus the server's shutdown.
func TestWebhookDrains(t *testing.T) {
	spec := typed[appsv1.Deployment](t, webhookDeployment(params())).Spec.Template.Spec
	lc := spec.Containers[0].Lifecycle
	if lc == nil || lc.PreStop == nil || lc.PreStop.Sleep == nil || lc.PreStop.Sleep.Seconds != WebhookDrainSeconds {
		t.Fatalf("webhook lifecycle %+v, want a preStop sleep of %ds", lc, WebhookDrainSeconds)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g-WebhookDrainSeconds)*time.Second <= ShutdownTimeout {
		t.Errorf("termination grace %v does not outlast the %ds drain and the %s shutdown", g, WebhookDrainSeconds, ShutdownTimeout)
	}
	ctl := typed[appsv1.Deployment](t, controllerDeployment(params())).Spec.Template.Spec
	if g := ctl.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= ShutdownTimeout {
		t.Errorf("controller termination grace %v does not outlast its %s shutdown", g, ShutdownTimeout)
	}
	if c := typed[appsv1.Deployment](t, controllerDeployment(params())).Spec.Template.Spec.Containers[0]; c.Lifecycle != nil {
		t.Errorf("the controller, which serves no admission call, got a preStop delay: %+v", c.Lifecycle)
	}
}

// TestMetricsServices checks that each component's metrics Service selects that component's
// pods on the container's HTTPS metrics port and carries the label the ServiceMonitor selects.
func TestMetricsServices(t *testing.T) {
	p := params()
	for _, c := range []struct {
		component, service, secret string
		deployment                 *appsv1.Deployment
	}{
		{WebhookComponentName, WebhookMetricsServiceName, WebhookMetricsSecretName, typed[appsv1.Deployment](t, webhookDeployment(p))},
		{ControllerComponentName, ControllerMetricsServiceName, ControllerMetricsSecretName, typed[appsv1.Deployment](t, controllerDeployment(p))},
	} {
		t.Run(c.component, func(t *testing.T) {
			svc := typed[corev1.Service](t, metricsService(p, c.component, c.secret))
			if svc.Name != c.service || svc.Labels[MetricsServiceLabel] != "true" {
				t.Errorf("Service %s labels %v: want name %s and %s=true", svc.Name, svc.Labels, c.service, MetricsServiceLabel)
			}
			podLabels := c.deployment.Spec.Template.Labels
			for k, v := range svc.Spec.Selector {
				if podLabels[k] != v {
					t.Errorf("selector %s=%s does not match the pod template labels %v", k, v, podLabels)
				}
			}
			port := svc.Spec.Ports[0]
			var containerPort int32
			for _, cp := range c.deployment.Spec.Template.Spec.Containers[0].Ports {
				if cp.Name == port.TargetPort.StrVal {
					containerPort = cp.ContainerPort
				}
			}
			if port.Name != "metrics" || containerPort != MetricsPort || port.Port != MetricsPort {
				t.Errorf("port %+v targets container port %d, want the metrics port %d", port, containerPort, MetricsPort)
			}
		})
	}
}

// TestMetricsCertificates: each component serves its metrics with the certificate of its own
// Secret, mounted where --metrics-cert-dir points; with service-ca the metrics Service asks
// OpenShift for that Secret, with the other providers the operator's CA fills it (steps.go)
// and the Service carries no annotation.
func TestMetricsCertificates(t *testing.T) {
	for _, provider := range certs.Providers() {
		p := params()
		p.provider = provider
		for _, c := range []struct {
			component, secret string
			deployment        *appsv1.Deployment
		}{
			{WebhookComponentName, WebhookMetricsSecretName, typed[appsv1.Deployment](t, webhookDeployment(p))},
			{ControllerComponentName, ControllerMetricsSecretName, typed[appsv1.Deployment](t, controllerDeployment(p))},
		} {
			t.Run(string(provider)+"/"+c.component, func(t *testing.T) {
				spec := c.deployment.Spec.Template.Spec
				var volume *corev1.SecretVolumeSource
				for _, v := range spec.Volumes {
					if v.Name == "metrics-cert" {
						volume = v.Secret
					}
				}
				if volume == nil || volume.SecretName != c.secret {
					t.Errorf("metrics-cert volume %+v, want Secret %s", volume, c.secret)
				}
				mounted := slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == "metrics-cert" && m.MountPath == MetricsCertDir && m.ReadOnly
				})
				if !mounted || !slices.Contains(spec.Containers[0].Args, "--metrics-cert-dir="+MetricsCertDir) {
					t.Errorf("mounts %+v, args %q: want metrics-cert read-only at %s and --metrics-cert-dir pointing there",
						spec.Containers[0].VolumeMounts, spec.Containers[0].Args, MetricsCertDir)
				}
				svc := typed[corev1.Service](t, metricsService(p, c.component, c.secret))
				want := map[string]string(nil)
				if provider == certs.ProviderServiceCA {
					want = map[string]string{certs.AnnotationServingCertSecretName: c.secret}
				}
				if diff := cmp.Diff(want, svc.Annotations); diff != "" {
					t.Errorf("metrics Service annotations (-want +got):\n%s", diff)
				}
			})
		}
	}
	// A namespace's local components serve no metrics, so mount no certificate.
	local := localParams(params(), "team")
	for name, d := range map[string]*appsv1.Deployment{
		LocalWebhookComponentName:    typed[appsv1.Deployment](t, localWebhookDeployment(local)),
		LocalControllerComponentName: typed[appsv1.Deployment](t, localControllerDeployment(local)),
	} {
		if slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "metrics-cert" }) {
			t.Errorf("%s mounts a metrics certificate", name)
		}
	}
}

// TestComponentsScheduling: spec.components reaches the pod templates it is meant for, and
// nothing else changes without it.
func TestComponentsScheduling(t *testing.T) {
	tolerations := []corev1.Toleration{
		{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
	}
	p := params()
	p.components = &v1beta1.ComponentsConfig{
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "mirror-pull"}},
		NodeSelector:      map[string]string{"node-role.kubernetes.io/infra": ""},
		Tolerations:       tolerations,
		PriorityClassName: "system-cluster-critical",
	}
	local := localParams(p, "team")
	for _, tc := range []struct {
		name            string
		spec            corev1.PodSpec
		wantPullSecrets []corev1.LocalObjectReference
	}{
		{WebhookComponentName, typed[appsv1.Deployment](t, webhookDeployment(p)).Spec.Template.Spec, p.components.ImagePullSecrets},
		{ControllerComponentName, typed[appsv1.Deployment](t, controllerDeployment(p)).Spec.Template.Spec, p.components.ImagePullSecrets},
		// The operator namespace's Secrets cannot serve pods of another namespace.
		{LocalWebhookComponentName, typed[appsv1.Deployment](t, localWebhookDeployment(local)).Spec.Template.Spec, nil},
		{LocalControllerComponentName, typed[appsv1.Deployment](t, localControllerDeployment(local)).Spec.Template.Spec, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantPullSecrets, tc.spec.ImagePullSecrets); diff != "" {
				t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(p.components.NodeSelector, tc.spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tolerations, tc.spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if tc.spec.PriorityClassName != "system-cluster-critical" {
				t.Errorf("priorityClassName %q", tc.spec.PriorityClassName)
			}
			if tc.spec.Affinity == nil || tc.spec.Affinity.NodeAffinity == nil {
				t.Error("the node affinity on Linux and the image's architectures is gone")
			}
		})
	}
	plain := typed[appsv1.Deployment](t, webhookDeployment(params())).Spec.Template.Spec
	if plain.ImagePullSecrets != nil || plain.NodeSelector != nil || plain.Tolerations != nil || plain.PriorityClassName != "" {
		t.Errorf("without spec.components the webhook's pods got %v %v %v %q", plain.ImagePullSecrets, plain.NodeSelector, plain.Tolerations, plain.PriorityClassName)
	}
}
