//go:build e2e

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

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/realnode"
)

// The two releases `make e2e` builds (make release, into bin/release-e2e/<version>) with their
// image in this repository, imported into the node by digest as a registry would serve it.
const (
	releaseRepository = "localhost/archgate/archgate"
	firstRelease      = "0.1.0-e2e"
	secondRelease     = "0.2.0-e2e"
)

func releaseDir(version string) string {
	return filepath.Join(repoRoot, "bin", "release-e2e", version)
}

// TestReleaseInstallUpgradeUninstall installs archgate from release artifacts as a platform
// team would, first install.yaml with kubectl, then the Helm chart with helm; each time it
// places pods, upgrades to the second release (the operator and the components it runs move to
// its image, the status names its version), places pods again and uninstalls, leaving no pod
// gated and nothing of archgate behind.
func TestReleaseInstallUpgradeUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	c, err := realnode.Up(ctx, realnode.Options{RepoRoot: repoRoot})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{firstRelease, secondRelease} {
		if err := c.ImportImage(ctx, filepath.Join(releaseDir(v), "archgate-image.oci.tar"), releaseRepository); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := c.RegistryCA()
	if err != nil {
		t.Fatal(err)
	}
	base := &env{t: t, cs: kubernetes.NewForConfigOrDie(c.Config), dyn: dynamic.NewForConfigOrDie(c.Config), cfg: c.Kubeconfig}
	// Relative paths name files from the test's directory: exec resolves a command's too.
	base.tool(ctx, filepath.Join(repoRoot, "hack", "kubectl.sh"))
	kubectl := filepath.Join(repoRoot, "bin", "k8s", "kubectl")
	helm := filepath.Join(repoRoot, "bin", "helm")

	base.run(ctx, "install.yaml with kubectl", func(ctx context.Context, e *env) {
		e.releaseCycle(ctx, ca, func(version string) {
			e.tool(ctx, kubectl, "apply", "--server-side", "--field-manager=archgate-install", "-f", filepath.Join(releaseDir(version), "install.yaml"))
		}, func() {
			e.tool(ctx, kubectl, "delete", "--wait", "--timeout=5m", "-f", filepath.Join(releaseDir(secondRelease), "install.yaml"))
		})
	})
	base.run(ctx, "Helm chart with helm", func(ctx context.Context, e *env) {
		chart := func(version string) string { return filepath.Join(releaseDir(version), "archgate-"+version+".tgz") }
		e.releaseCycle(ctx, ca, func(version string) {
			e.tool(ctx, helm, "upgrade", "--install", "archgate", chart(version), "--namespace", namespace, "--create-namespace", "--wait", "--timeout=5m")
		}, func() {
			e.tool(ctx, helm, "uninstall", "archgate", "--namespace", namespace, "--wait", "--timeout=5m")
			// Helm leaves the CRDs of crds/ and the namespace it created (docs/install.md).
			e.tool(ctx, kubectl, "delete", "--wait", "--timeout=5m", "-f", filepath.Join(releaseDir(secondRelease), "crds.yaml"))
			e.tool(ctx, kubectl, "delete", "namespace", namespace, "--wait", "--timeout=5m")
		})
	})
}

// releaseCycle installs the first release, places pods, upgrades to the second, places pods,
// removes the ClusterPodPlacementConfig (the operator releases what it gated) and uninstalls.
func (e *env) releaseCycle(ctx context.Context, ca []byte, install func(version string), uninstall func()) {
	e.t.Helper()
	start := time.Now()
	install(firstRelease)
	e.waitAvailable(ctx, namespace, "archgate-operator")
	e.createSample(ctx, ca)
	e.waitRelease(ctx, firstRelease)
	e.t.Logf("figure: install %s to ClusterPodPlacementConfig Available: %s", firstRelease, time.Since(start).Round(time.Millisecond))
	testARM64OnFakeNode(ctx, e)

	start = time.Now()
	install(secondRelease)
	e.waitRelease(ctx, secondRelease)
	e.t.Logf("figure: upgrade to %s, every component rolled out: %s", secondRelease, time.Since(start).Round(time.Millisecond))
	testARM64OnFakeNode(ctx, e)

	if err := e.dyn.Resource(cppcResource()).Delete(ctx, v1beta1.SingletonName, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(ctx, "ClusterPodPlacementConfig gone", func() bool {
		_, err := e.dyn.Resource(cppcResource()).Get(ctx, v1beta1.SingletonName, metav1.GetOptions{})
		return err != nil
	})
	uninstall()
	e.checkNothingLeft(ctx)
	if gated := e.gatedPods(ctx); len(gated) != 0 {
		e.t.Errorf("pods still gated after the uninstall: %v", gated)
	}
}

// waitRelease waits until the operator of version wrote its status and the webhook and the
// controller run the operator's own image, rolled out, with the configuration Available.
func (e *env) waitRelease(ctx context.Context, version string) {
	e.t.Helper()
	e.waitFor(ctx, "status.operatorVersion "+version+" and the components on the operator's image", func() bool {
		obj, err := e.dyn.Resource(cppcResource()).Get(ctx, v1beta1.SingletonName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if got, _, _ := unstructured.NestedString(obj.Object, "status", "operatorVersion"); got != version {
			return false
		}
		op, err := e.cs.AppsV1().Deployments(namespace).Get(ctx, "archgate-operator", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, name := range []string{"archgate-webhook", "archgate-controller"} {
			d, err := e.cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Spec.Template.Spec.Containers[0].Image != op.Spec.Template.Spec.Containers[0].Image {
				return false
			}
		}
		return true
	})
	for _, name := range []string{"archgate-operator", "archgate-webhook", "archgate-controller"} {
		e.waitRolledOut(ctx, namespace, name)
	}
	e.waitSampleCondition(ctx, v1beta1.ConditionAvailable)
}

// tool runs a command line against the cluster, as a user would.
func (e *env) tool(ctx context.Context, name string, args ...string) {
	e.t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cfg)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}
