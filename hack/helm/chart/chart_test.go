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

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// root is the repository's root.
const root = "../../.."

// helmTemplate renders the chart with helm (HELM, which make test-chart sets) into
// namespace, with the values files given.
func helmTemplate(t *testing.T, namespace string, args ...string) []object {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Fatal("HELM must name the helm binary: run make test-chart")
	}
	cmd := exec.Command(helm, append([]string{"template", "archgate", filepath.Join(root, chartDir), "--namespace", namespace, "--include-crds"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, stderr.String())
	}
	var objs []object
	for _, doc := range strings.Split("\n"+string(out), "\n---\n") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("helm template printed a document that is not YAML: %v\n%s", err, doc)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

func byID(objs []object) map[string]object {
	m := map[string]object{}
	for _, o := range objs {
		if kindOf(o) != "Namespace" {
			m[idOf(o)] = o
		}
	}
	return m
}

func valuesFile(t *testing.T, values string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestChartRendersTheManifests: with the values each overlay stands for, the chart renders
// exactly what kustomize builds from that overlay, but for the Namespace (helm installs into the
// release's).
func TestChartRendersTheManifests(t *testing.T) {
	for overlay, values := range map[string]string{
		"kubernetes":   "",
		"openshift":    "certProvider: service-ca",
		"cert-manager": "certProvider: cert-manager",
		"monitoring":   "monitoring: {enabled: true}",
	} {
		t.Run(overlay, func(t *testing.T) {
			want, err := build(filepath.Join(root, "deploy", "overlays", overlay))
			if err != nil {
				t.Fatal(err)
			}
			wantByID, gotByID := byID(want), byID(helmTemplate(t, manifestNamespace, "--values", valuesFile(t, values)))
			for id := range wantByID {
				if _, ok := gotByID[id]; !ok {
					t.Errorf("%s: in kustomize build deploy/overlays/%s, not in helm template with %q", id, overlay, values)
				}
			}
			for id, got := range gotByID {
				if diff := cmp.Diff(wantByID[id], got); diff != "" {
					t.Errorf("%s: helm template with %q against kustomize build deploy/overlays/%s (-kustomize +helm):\n%s (run make chart)", id, values, overlay, diff)
				}
			}
		})
	}
}

// TestChartValues: what a platform team sets reaches the objects.
func TestChartValues(t *testing.T) {
	values := `
image: {repository: registry.corp.example/mirror/archgate, tag: "0.1.0", digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", pullPolicy: IfNotPresent}
imagePullSecrets: [{name: mirror-pull}]
operator:
  replicas: 3
  resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 1Gi}}
  nodeSelector: {node-role.kubernetes.io/infra: ""}
  tolerations: [{key: node-role.kubernetes.io/infra, operator: Exists, effect: NoSchedule}]
  priorityClassName: system-cluster-critical
monitoring: {enabled: true}
`
	objs := byID(helmTemplate(t, "platform-archgate", "--values", valuesFile(t, values)))
	d, ok := objs["Deployment/"+operatorName]
	if !ok {
		t.Fatalf("no Deployment %s in %v", operatorName, objs)
	}
	var want object
	if err := yaml.Unmarshal([]byte(values), &want); err != nil {
		t.Fatal(err)
	}
	op := want["operator"].(map[string]any)
	spec := d["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	for what, pair := range map[string][2]any{
		"image":             {c["image"], "registry.corp.example/mirror/archgate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		"imagePullPolicy":   {c["imagePullPolicy"], "IfNotPresent"},
		"imagePullSecrets":  {pod["imagePullSecrets"], want["imagePullSecrets"]},
		"replicas":          {spec["replicas"], op["replicas"]},
		"resources":         {c["resources"], op["resources"]},
		"nodeSelector":      {pod["nodeSelector"], op["nodeSelector"]},
		"tolerations":       {pod["tolerations"], op["tolerations"]},
		"priorityClassName": {pod["priorityClassName"], op["priorityClassName"]},
	} {
		if diff := cmp.Diff(pair[1], pair[0]); diff != "" {
			t.Errorf("%s (-values +deployment):\n%s", what, diff)
		}
	}
	// Every mention of archgate's namespace follows the release's, the names the ServiceMonitors
	// verify the metrics certificates for included.
	sm := objs["ServiceMonitor/archgate-controller"]
	if sm == nil {
		t.Fatal("monitoring enabled, but no ServiceMonitor archgate-controller")
	}
	if got := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)["tlsConfig"].(map[string]any)["serverName"]; got != "archgate-controller-metrics.platform-archgate.svc" {
		t.Errorf("ServiceMonitor archgate-controller serverName %v, want archgate-controller-metrics.platform-archgate.svc", got)
	}
	for id, o := range objs {
		if y, _ := yaml.Marshal(o); strings.Contains(string(y), manifestNamespace) {
			t.Errorf("%s still names %s in namespace platform-archgate:\n%s", id, manifestNamespace, y)
		}
	}
	if ns := objs["Deployment/"+operatorName]["metadata"].(map[string]any)["namespace"]; ns != "platform-archgate" {
		t.Errorf("the operator's namespace is %v, want platform-archgate", ns)
	}
}
