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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

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
	wantProvider := map[string]string{"kubernetes": "self-signed", "openshift": "service-ca", "cert-manager": "cert-manager", "monitoring": "self-signed"}
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

// TestMonitoringComponent checks deploy/components/monitoring (through the monitoring overlay):
// the ServiceMonitor selects the metrics Services of all three components over HTTPS with a
// bearer token, the binding grants the metrics reader role, and every alert links a runbook
// section that exists in docs/operations.md.
func TestMonitoringComponent(t *testing.T) {
	objs := render(t, filepath.Join(deployDir, "overlays", "monitoring"))
	sm := find(objs, "ServiceMonitor", "archgate")
	if sm == nil {
		t.Fatal("no ServiceMonitor archgate")
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if selector[operator.MetricsServiceLabel] != "true" || len(selector) != 1 {
		t.Errorf("ServiceMonitor selects %v, want %s=true (the label of the metrics Services)", selector, operator.MetricsServiceLabel)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	if ep["port"] != "metrics" || ep["scheme"] != "https" || ep["bearerTokenFile"] == nil {
		t.Errorf("ServiceMonitor endpoint %v, want port metrics, https and a bearer token", ep)
	}
	svc := find(objs, "Service", "archgate-operator-metrics")
	if svc == nil || svc.GetLabels()[operator.MetricsServiceLabel] != "true" {
		t.Errorf("the operator's metrics Service is missing or lacks %s=true", operator.MetricsServiceLabel)
	}
	binding := find(objs, "ClusterRoleBinding", "archgate-metrics-reader")
	if binding == nil {
		t.Fatal("no ClusterRoleBinding archgate-metrics-reader")
	}
	if ref, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name"); ref != "archgate-metrics-reader" ||
		find(objs, "ClusterRole", "archgate-metrics-reader") == nil {
		t.Errorf("the metrics reader binding refers to ClusterRole %q, which must be archgate-metrics-reader and rendered", ref)
	}
	assertRunbooks(t, find(objs, "PrometheusRule", "archgate"))
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
