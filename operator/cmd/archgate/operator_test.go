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
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// parse resolves args to a subcommand of the archgate command and parses its flags, as
// `archgate args...` would, without running it.
func parse(t *testing.T, args []string) {
	t.Helper()
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("archgate %q: %v", args, err)
	}
	if cmd == root {
		t.Fatalf("archgate %q: no such subcommand", args)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("archgate %s: %v", strings.Join(args, " "), err)
	}
}

// TestOperandArgsParse checks that the command lines the operator gives the components are
// ones the archgate binary accepts.
func TestOperandArgsParse(t *testing.T) {
	full := operator.ComponentArgs{
		Namespace: "archgate-system", LogVerbosity: v1beta1.LogVerbosityTraceAll, CertDir: operator.ServingCertDir,
		WebhookPort: operator.WebhookPort, MetricsBindAddress: ":8443", HealthProbeBindAddress: ":8081",
		GlobalPullSecret: &types.NamespacedName{Namespace: "openshift-config", Name: "pull-secret"}, RegistryCABundleFile: "/etc/archgate/registry-ca/ca-bundle.crt",
		CredentialProviderConfigFile: operator.CredentialProvidersDir + "/config.yaml", CredentialProviderBinDir: operator.CredentialProviderBinDir,
		ExecFormatErrorMonitor: true,
	}
	for _, component := range []string{"webhook", "controller"} {
		t.Run(component, func(t *testing.T) {
			parse(t, operator.DefaultArgs(component, full))
			parse(t, operator.DefaultArgs(component, operator.ComponentArgs{Namespace: "ns"}))
		})
	}
}

// TestDeployedOperatorArgsParse checks the operator's command line in deploy/base.
func TestDeployedOperatorArgsParse(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "base", "operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(raw), "\n---\n")
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict([]byte(doc), d); err != nil {
		t.Fatal(err)
	}
	parse(t, d.Spec.Template.Spec.Containers[0].Args)
}

func TestUngateGates(t *testing.T) {
	for gate, want := range map[string][]bool{"all": {true, false}, "cluster": {false}, "local": {true}} {
		got, err := ungateGates(gate)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("--gate %s: %v, %v; want %v (local first)", gate, got, err, want)
		}
	}
	if _, err := ungateGates("both"); err == nil || !strings.Contains(err.Error(), `--gate "both": want all, cluster or local`) {
		t.Errorf("--gate both: %v", err)
	}
}

func TestUngateNeedsAScope(t *testing.T) {
	for _, args := range [][]string{{"ungate"}, {"ungate", "-n", "a", "-A"}} {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(new(strings.Builder))
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--namespace NAMESPACE or --all-namespaces") {
			t.Errorf("archgate %v: %v", args, err)
		}
	}
}

func TestParseDryRun(t *testing.T) {
	for _, tc := range []struct {
		value          string
		client, server bool
		err            string
	}{
		{value: "client", client: true},
		{value: "true", client: true},
		{value: "server", server: true},
		{value: "none"},
		{value: "false"},
		{value: "all", err: `--dry-run "all": want none, client or server`},
	} {
		client, server, err := parseDryRun(tc.value)
		if client != tc.client || server != tc.server || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("parseDryRun(%q) = %v, %v, %v; want %v, %v, %q", tc.value, client, server, err, tc.client, tc.server, tc.err)
		}
	}
}

func TestPodKey(t *testing.T) {
	fromContext := func() (string, error) { return "ctx-ns", nil }
	for _, tc := range []struct {
		arg, namespace string
		want           types.NamespacedName
		err            string
	}{
		{arg: "team-a/web-1", want: types.NamespacedName{Namespace: "team-a", Name: "web-1"}},
		{arg: "web-1", namespace: "team-a", want: types.NamespacedName{Namespace: "team-a", Name: "web-1"}},
		{arg: "web-1", want: types.NamespacedName{Namespace: "ctx-ns", Name: "web-1"}},
		{arg: "team-a/web-1", namespace: "team-a", want: types.NamespacedName{Namespace: "team-a", Name: "web-1"}},
		{arg: "team-a/web-1", namespace: "team-b", err: `"team-a/web-1": want POD with -n NAMESPACE, or NAMESPACE/POD`},
		{arg: "/web-1", err: `"/web-1": want POD with -n NAMESPACE, or NAMESPACE/POD`},
	} {
		got, err := podKey(tc.arg, tc.namespace, fromContext)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("podKey(%q, -n %q) = %v, %v; want %v, %q", tc.arg, tc.namespace, got, err, tc.want, tc.err)
		}
	}
}
