//go:build integration

package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/archgate/archgate/operator/pkg/testenv/procfs"
	"github.com/archgate/archgate/simulator/internal/runner"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestSmokeScenario runs scenarios/smoke.yaml end to end (envtest, embedded
// scheduler, fake registry over TLS, the operator's webhook and controller
// through operator/pkg/roles) and checks each of its expectations in a
// subtest, like a strict checker over the run's summary. Budget: 60 s with
// the control-plane start.
func TestSmokeScenario(t *testing.T) {
	loaded, err := scenario.Load(filepath.Join("..", "..", "..", "scenarios", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := runner.Run(ctx, runner.Options{Scenario: loaded})
	if err != nil {
		t.Fatalf("run failed: %v (errors %v)", err, rep)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("smoke took %s, budget 60s", d.Round(time.Second))
	}
	for _, c := range procfs.Children(os.Getpid()) {
		if c.Name == "kube-apiserver" || c.Name == "etcd" {
			t.Errorf("%s (pid %d) still running after the run", c.Name, c.PID)
		}
	}
	files, err := rep.Write(t.TempDir())
	if err != nil {
		t.Errorf("writing the report: %v", err)
	}
	t.Logf("report %s", files.Markdown)
	for _, e := range rep.Errors {
		t.Errorf("run error: %s", e)
	}
	if len(rep.Expectations) != len(loaded.Checks) {
		t.Fatalf("%d outcomes for %d expectations", len(rep.Expectations), len(loaded.Checks))
	}
	for _, o := range rep.Expectations {
		t.Run(o.Check, func(t *testing.T) {
			if !o.Measured {
				t.Fatalf("%s: not measured by the run", o.Metric)
			}
			if !o.Passed {
				t.Errorf("%s: measured %s (threshold from: %s)", o.Check,
					scenario.FormatValue(scenario.Unit(o.Unit), o.Value), o.Source)
			}
		})
	}
	m := rep.Main
	t.Logf("smoke: %d pods, gate-hold p99 %.1fms, schedule p99 %.1fms, %.1f pods/s, cache hit rate %.3f",
		m.Pods, m.Latency["gateHold"].P99*1e3, m.Latency["schedule"].P99*1e3, m.Throughput, rep.Operator.CacheHitRate)
}
