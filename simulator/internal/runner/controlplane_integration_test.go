//go:build integration

package runner_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/runner"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestControlPlaneLikeCluster runs no-operator's workload on a control plane configured as a
// cluster's (kube-controller-manager beside the apiserver, which runs ServiceAccount
// admission and priority and fairness): the pods must all be bound, and the controller
// manager's CPU must show in the pass's cost. make test-integration builds the binary first
// (make cluster-components).
func TestControlPlaneLikeCluster(t *testing.T) {
	kcm, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", "cluster", "kube-controller-manager"))
	if err != nil {
		t.Fatal(err)
	}
	loaded := loadShipped(t, "no-operator")
	loaded.Scenario.ControlPlane = scenario.ControlPlaneSpec{ControllerManager: true, ClusterDefaults: true}
	loaded.Scenario.Workload.Pods = 300
	loaded.Checks = nil
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rep, err := runner.Run(ctx, runner.Options{Scenario: loaded, ControllerManager: kcm})
	if err != nil {
		t.Fatalf("run failed: %v (make cluster-components builds %s)", err, kcm)
	}
	for _, e := range rep.Errors {
		t.Errorf("run error: %s", e)
	}
	m := rep.Main
	if m.BoundPods != m.Pods {
		t.Errorf("%d of %d pods bound", m.BoundPods, m.Pods)
	}
	var cpu float64
	for _, c := range m.Cost.Components {
		if c.Name == report.ComponentControllerManager {
			cpu = c.CPUSeconds
		}
	}
	if cpu <= 0 {
		t.Errorf("no %s CPU in the pass's cost %+v: it did not run", report.ComponentControllerManager, m.Cost.Components)
	}
	noChildrenLeft(t)
	t.Logf("kube-controller-manager: %.2f CPU-s over the pass of %d pods", cpu, m.Pods)
}
