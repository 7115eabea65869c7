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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/internal/certs"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// deployDir is the repository's deploy/ directory.
var deployDir = filepath.Join("..", "..", "..", "..", "deploy")

// overlays returns the kustomize overlays under deploy/overlays.
func overlays(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(deployDir, "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) < 2 {
		t.Fatalf("found overlays %v, want at least kubernetes and openshift", out)
	}
	return out
}

// render builds a kustomization directory as `kustomize build` does.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(y, &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestOverlaysRender(t *testing.T) {
	wantProvider := map[string]string{"kubernetes": "self-signed", "openshift": "service-ca", "cert-manager": "cert-manager", "monitoring": "self-signed",
		"openshift-monitoring": "service-ca"}
	for _, overlay := range overlays(t) {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, filepath.Join(deployDir, "overlays", overlay))
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
				if o.GetLabels()["app.kubernetes.io/part-of"] != "archgate" {
					t.Errorf("%s %s lacks the part-of label", o.GetKind(), o.GetName())
				}
			}
			for _, want := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
				"Role", "RoleBinding", "Deployment", "Service", "ValidatingWebhookConfiguration", "PodDisruptionBudget"} {
				if !slices.Contains(kinds, want) {
					t.Errorf("no %s rendered", want)
				}
			}
			u := find(objs, "Deployment", "archgate-operator")
			if u == nil {
				t.Fatal("no operator Deployment")
			}
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
				t.Fatal(err)
			}
			assertRestricted(t, d.Spec.Template.Spec)
			// It serves failurePolicy: Fail webhooks: more than one replica, each draining.
			if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
				t.Errorf("operator replicas %v, want at least 2", d.Spec.Replicas)
			}
			assertDrains(t, d.Spec.Template.Spec)
			if pdb := find(objs, "PodDisruptionBudget", "archgate-operator"); pdb == nil {
				t.Error("no PodDisruptionBudget for the operator")
			}
			c := d.Spec.Template.Spec.Containers[0]
			if !slices.Contains(c.Args, "--cert-provider="+wantProvider[overlay]) {
				t.Errorf("operator args %q, want --cert-provider=%s", c.Args, wantProvider[overlay])
			}
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" && e.ValueFrom != nil }) {
				t.Error("the operator cannot find its own image: no POD_NAME from the downward API")
			}
		})
	}
}

// assertDrains checks that a webhook server's pod keeps serving after it is told to stop for
// longer than endpoint removal takes to propagate, and is given the time to finish.
func assertDrains(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds < 5 {
		t.Errorf("container %s lifecycle %+v: want a preStop sleep of at least 5s", c.Name, c.Lifecycle)
		return
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	if grace < c.Lifecycle.PreStop.Sleep.Seconds+10 {
		t.Errorf("termination grace %ds does not outlast the preStop sleep (%ds) by 10s", grace, c.Lifecycle.PreStop.Sleep.Seconds)
	}
}

func assertRestricted(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want runAsNonRoot and seccomp RuntimeDefault", psc)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
			!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s security context %+v: want no privilege escalation, read-only root, drop ALL", c.Name, sc)
		}
	}
}

// TestMonitoringComponent checks deploy/components/monitoring, through the monitoring overlay
// and, with deploy/components/monitoring-openshift, the openshift-monitoring overlay: one
// ServiceMonitor per component selects exactly that component's metrics Service (as the
// manifests and the operator label them), scrapes it over HTTPS with the token of a
// ServiceAccount bound to the metrics reader role and verifies its certificate against the
// CA of the overlay's provider for the Service's name, keeping the metrics' own labels; the
// alerts select those Services' jobs and link runbooks; the Grafana dashboard is the one in
// dashboards/.
func TestMonitoringComponent(t *testing.T) {
	const ns = "archgate-system"
	published := map[string]string{"name": operator.MetricsCAConfigMapName, "key": certs.KeyServingCA}
	for overlay, wantCA := range map[string]map[string]string{
		"monitoring":           published,
		"openshift-monitoring": {"name": "openshift-service-ca.crt", "key": "service-ca.crt"},
	} {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, filepath.Join(deployDir, "overlays", overlay))
			// The Services' labels: the operator's from the manifests, the components' as the
			// operator renders them.
			services := map[string]map[string]string{}
			if svc := find(objs, "Service", operator.DefaultOperatorMetricsServiceName); svc != nil {
				services[svc.GetName()] = svc.GetLabels()
			}
			for _, c := range []string{operator.WebhookComponentName, operator.ControllerComponentName} {
				labels := operator.ManagedLabels(c)
				labels[operator.MetricsServiceLabel] = "true"
				services[c+"-metrics"] = labels
			}
			scraper := assertScraperIdentity(t, objs)
			jobs := map[string]bool{}
			for _, component := range []string{"operator", "webhook", "controller"} {
				sm := find(objs, "ServiceMonitor", "archgate-"+component)
				if sm == nil {
					t.Errorf("no ServiceMonitor archgate-%s", component)
					continue
				}
				selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
				var selected []string
				for name, labels := range services {
					if matches(selector, labels) {
						selected = append(selected, name)
					}
				}
				if want := "archgate-" + component + "-metrics"; len(selected) != 1 || selected[0] != want {
					t.Errorf("ServiceMonitor archgate-%s selects %v (selector %v), want the Service %s", component, selected, selector, want)
					continue
				}
				jobs[selected[0]] = true
				var spec struct {
					JobLabel  string `json:"jobLabel"`
					Endpoints []struct {
						Port            string `json:"port"`
						Scheme          string `json:"scheme"`
						BearerTokenFile string `json:"bearerTokenFile"`
						HonorLabels     bool   `json:"honorLabels"`
						Authorization   *struct {
							Type        string            `json:"type"`
							Credentials map[string]string `json:"credentials"`
						} `json:"authorization"`
						TLSConfig struct {
							InsecureSkipVerify bool   `json:"insecureSkipVerify"`
							ServerName         string `json:"serverName"`
							CA                 struct {
								ConfigMap map[string]string `json:"configMap"`
							} `json:"ca"`
						} `json:"tlsConfig"`
					} `json:"endpoints"`
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sm.Object["spec"].(map[string]any), &spec); err != nil {
					t.Fatal(err)
				}
				if len(spec.Endpoints) != 1 || spec.JobLabel != "" {
					t.Fatalf("ServiceMonitor archgate-%s: %d endpoints, jobLabel %q; want one, and the Service's name as job", component, len(spec.Endpoints), spec.JobLabel)
				}
				ep := spec.Endpoints[0]
				if ep.Port != "metrics" || ep.Scheme != "https" || ep.BearerTokenFile != "" {
					t.Errorf("ServiceMonitor archgate-%s endpoint port %q scheme %q bearerTokenFile %q: want metrics, https, no token file", component, ep.Port, ep.Scheme, ep.BearerTokenFile)
				}
				if !ep.HonorLabels {
					t.Errorf("ServiceMonitor archgate-%s: honorLabels off, the exec-format-error metrics' namespace label would be the scrape target's", component)
				}
				if a := ep.Authorization; a == nil || a.Type != "Bearer" || a.Credentials["name"] != scraper || a.Credentials["key"] != "token" {
					t.Errorf("ServiceMonitor archgate-%s authorization %+v, want Bearer from Secret %s key token", component, a, scraper)
				}
				if ep.TLSConfig.InsecureSkipVerify || ep.TLSConfig.ServerName != selected[0]+"."+ns+".svc" {
					t.Errorf("ServiceMonitor archgate-%s tlsConfig %+v, want the certificate verified for %s.%s.svc", component, ep.TLSConfig, selected[0], ns)
				}
				if diff := cmp.Diff(wantCA, ep.TLSConfig.CA.ConfigMap); diff != "" {
					t.Errorf("ServiceMonitor archgate-%s trusts (-want +got):\n%s", component, diff)
				}
			}
			rule := find(objs, "PrometheusRule", "archgate")
			assertRunbooks(t, rule)
			for _, m := range regexp.MustCompile(`job="([^"]+)"`).FindAllStringSubmatch(fmt.Sprint(rule.Object["spec"]), -1) {
				if !jobs[m[1]] {
					t.Errorf("an alert selects job %q, which no ServiceMonitor scrapes (jobs %v)", m[1], jobs)
				}
			}
			assertDashboard(t, objs)
			if overlay == "openshift-monitoring" {
				assertOpenShiftMonitoring(t, objs)
			}
		})
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// assertScraperIdentity checks the identity the ServiceMonitors scrape with: a ServiceAccount
// bound to the metrics reader role (and to nothing else here) and a token Secret for it. It
// returns the Secret's name.
func assertScraperIdentity(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	binding := find(objs, "ClusterRoleBinding", "archgate-metrics-reader")
	if binding == nil {
		t.Fatal("no ClusterRoleBinding archgate-metrics-reader")
	}
	if ref, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name"); ref != "archgate-metrics-reader" ||
		find(objs, "ClusterRole", "archgate-metrics-reader") == nil {
		t.Errorf("the metrics reader binding refers to ClusterRole %q, which must be archgate-metrics-reader and rendered", ref)
	}
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if len(subjects) != 1 {
		t.Fatalf("metrics reader binding subjects %v, want the scraper's ServiceAccount", subjects)
	}
	sa := subjects[0].(map[string]any)
	if sa["kind"] != "ServiceAccount" || sa["namespace"] != "archgate-system" || find(objs, "ServiceAccount", fmt.Sprint(sa["name"])) == nil {
		t.Fatalf("metrics reader binding subject %v, want a ServiceAccount rendered in archgate-system", sa)
	}
	for _, o := range objs {
		if o.GetKind() == "Secret" && o.GetAnnotations()[corev1.ServiceAccountNameKey] == sa["name"] {
			if typ, _, _ := unstructured.NestedString(o.Object, "type"); typ != string(corev1.SecretTypeServiceAccountToken) {
				t.Errorf("Secret %s type %q, want %s", o.GetName(), typ, corev1.SecretTypeServiceAccountToken)
			}
			return o.GetName()
		}
	}
	t.Fatalf("no token Secret for ServiceAccount %v", sa["name"])
	return ""
}

// assertDashboard checks that the dashboard ConfigMap carries dashboards/archgate.json for
// Grafana's sidecar (TestDashboardNamesExportedMetrics in pkg/components checks its queries).
func assertDashboard(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	cm := find(objs, "ConfigMap", "archgate-grafana-dashboard")
	if cm == nil {
		t.Fatal("no ConfigMap archgate-grafana-dashboard")
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetNamespace() != "archgate-system" {
		t.Errorf("dashboard ConfigMap %s/%s labels %v: Grafana's sidecar wants grafana_dashboard=1", cm.GetNamespace(), cm.GetName(), cm.GetLabels())
	}
	want, err := os.ReadFile(filepath.Join(deployDir, "components", "monitoring", "dashboards", "archgate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "archgate.json"); got != string(want) {
		t.Error("the dashboard ConfigMap's archgate.json differs from dashboards/archgate.json")
	}
}

// assertOpenShiftMonitoring checks what OpenShift's platform Prometheus needs: the namespace
// label it selects namespaces by, and the right to discover the targets there.
func assertOpenShiftMonitoring(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if ns := find(objs, "Namespace", "archgate-system"); ns == nil || ns.GetLabels()["openshift.io/cluster-monitoring"] != "true" {
		t.Error("namespace archgate-system lacks openshift.io/cluster-monitoring=true")
	}
	role, binding := find(objs, "Role", "prometheus-k8s"), find(objs, "RoleBinding", "prometheus-k8s")
	if role == nil || binding == nil {
		t.Fatal("no Role and RoleBinding prometheus-k8s")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if got := fmt.Sprint(rules); !strings.Contains(got, "services") || !strings.Contains(got, "endpoints") || !strings.Contains(got, "pods") || strings.Contains(got, "secrets") {
		t.Errorf("Role prometheus-k8s rules %v: want services, endpoints and pods to discover targets, and no Secrets", rules)
	}
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if got := fmt.Sprint(subjects); len(subjects) != 1 || !strings.Contains(got, "namespace:openshift-monitoring") || !strings.Contains(got, "name:prometheus-k8s") {
		t.Errorf("RoleBinding prometheus-k8s subjects %v, want openshift-monitoring/prometheus-k8s", subjects)
	}
}

// assertRunbooks checks that every alert of the PrometheusRule has a runbook_url whose anchor
// is a heading of docs/operations.md.
func assertRunbooks(t *testing.T, rule *unstructured.Unstructured) {
	t.Helper()
	if rule == nil {
		t.Fatal("no PrometheusRule archgate")
	}
	doc, err := os.ReadFile(filepath.Join(deployDir, "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		if heading, ok := strings.CutPrefix(line, "#"); ok {
			anchors[markdownAnchor(strings.TrimLeft(heading, "# "))] = true
		}
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			name, _, _ := unstructured.NestedString(r.(map[string]any), "alert")
			url, _, _ := unstructured.NestedString(r.(map[string]any), "annotations", "runbook_url")
			alerts++
			_, anchor, _ := strings.Cut(url, "/docs/operations.md#")
			if !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q does not point at a heading of docs/operations.md", name, url)
			}
		}
	}
	if alerts == 0 {
		t.Error("the PrometheusRule has no alerts")
	}
}

// markdownAnchor is the anchor GitHub gives a heading: lower case, spaces to hyphens, other
// punctuation dropped.
func markdownAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestFleetExampleRenders(t *testing.T) {
	objs := render(t, filepath.Join(deployDir, "fleet"))
	bp := find(objs, "BindingPolicy", "archgate")
	if bp == nil {
		t.Fatal("no BindingPolicy archgate")
	}
	clauses, _, _ := unstructured.NestedSlice(bp.Object, "spec", "downsync")
	if len(clauses) == 0 {
		t.Fatal("BindingPolicy downsyncs nothing")
	}
	label := "app.kubernetes.io/part-of"
	for _, o := range objs {
		if o.GetKind() == "BindingPolicy" {
			continue
		}
		if o.GetLabels()[label] != "archgate" {
			t.Errorf("%s %s is not selected by the BindingPolicy (no %s=archgate label)", o.GetKind(), o.GetName(), label)
		}
	}
	if find(objs, "ClusterPodPlacementConfig", "cluster") == nil {
		t.Error("the fleet example does not roll out a ClusterPodPlacementConfig")
	}
	if !strings.HasPrefix(bp.GetAPIVersion(), "control.kubestellar.io/") {
		t.Errorf("BindingPolicy apiVersion %s", bp.GetAPIVersion())
	}
}

// TestNetworkPolicy checks the NetworkPolicy of archgate's namespace in every overlay: it
// covers every pod of the namespace, lets in exactly the ports the components serve, and lets
// out DNS and every address but the link-local ranges (the cloud's instance metadata service).
func TestNetworkPolicy(t *testing.T) {
	for _, overlay := range overlays(t) {
		t.Run(overlay, func(t *testing.T) {
			np := find(render(t, filepath.Join(deployDir, "overlays", overlay)), "NetworkPolicy", "archgate")
			if np == nil {
				t.Fatal("no NetworkPolicy archgate")
			}
			var spec struct {
				PodSelector map[string]any `json:"podSelector"`
				Ingress     []struct {
					From  []any `json:"from"`
					Ports []struct {
						Port int `json:"port"`
					} `json:"ports"`
				} `json:"ingress"`
				Egress []struct {
					To []struct {
						IPBlock struct {
							CIDR   string   `json:"cidr"`
							Except []string `json:"except"`
						} `json:"ipBlock"`
					} `json:"to"`
				} `json:"egress"`
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(np.Object["spec"].(map[string]any), &spec); err != nil {
				t.Fatal(err)
			}
			if len(spec.PodSelector) != 0 {
				t.Errorf("podSelector %v, want every pod of the namespace", spec.PodSelector)
			}
			var ports []int
			for _, in := range spec.Ingress {
				if len(in.From) != 0 {
					t.Errorf("ingress restricted to %v: the apiserver's address is not known here", in.From)
				}
				for _, p := range in.Ports {
					ports = append(ports, p.Port)
				}
			}
			slices.Sort(ports)
			if want := []int{operator.HealthPort, operator.MetricsPort, operator.WebhookPort}; !slices.Equal(ports, want) {
				t.Errorf("ingress ports %v, want %v (what the components serve)", ports, want)
			}
			blocked := map[string]bool{}
			for _, out := range spec.Egress {
				for _, to := range out.To {
					for _, e := range to.IPBlock.Except {
						blocked[e] = true
					}
				}
			}
			for _, want := range []string{"169.254.0.0/16", "fe80::/10"} {
				if !blocked[want] {
					t.Errorf("egress does not exclude %s (link-local: the instance metadata service)", want)
				}
			}
		})
	}
}
