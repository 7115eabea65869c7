//go:build integration

package runner_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
	"github.com/archgate/archgate/simulator/internal/runner"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestSmokeScenario runs scenarios/smoke.yaml end to end (envtest, embedded
// scheduler, fake registry over TLS, `archgate operator` and the webhook and
// controller it renders, run by package kubelet) and checks each of its
// expectations in a subtest, like a strict checker over the run's summary.
// Budget: 60 s with the control-plane start.
func TestSmokeScenario(t *testing.T) {
	loaded := loadShipped(t, "smoke")
	bin := buildBinaries(t, "archgate")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := runner.Run(ctx, runner.Options{Scenario: loaded, Archgate: filepath.Join(bin, "archgate")})
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

// TestSmokeScenarioAsProcesses runs smoke the way make scenario does: the
// webhook and controller as processes of the real archgate binary and the
// scheduler as the simulator's own command, and checks the cost accounting
// that only this mode can give: every component's CPU and memory, and the
// apiserver's requests per pod.
func TestSmokeScenarioAsProcesses(t *testing.T) {
	loaded := loadShipped(t, "smoke")
	bin := buildBinaries(t, "archgate", "simulator")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rep, err := runner.Run(ctx, runner.Options{Scenario: loaded, Archgate: filepath.Join(bin, "archgate"),
		SchedulerCommand: []string{filepath.Join(bin, "simulator")}})
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if !rep.Passed {
		t.Errorf("smoke did not pass: errors %v, expectations %+v", rep.Errors, rep.Expectations)
	}
	c := rep.Main.Cost
	if c == nil {
		t.Fatal("main pass has no cost")
	}
	for _, name := range []string{"kube-apiserver", "etcd", "scheduler", "webhook", "controller", "harness"} {
		comp, ok := c.Component(name)
		if !ok || comp.CPUSeconds <= 0 || comp.PeakRSSBytes <= 0 {
			t.Errorf("component %s: %+v (measured %v), want CPU and RSS", name, comp, ok)
		}
	}
	// Create, binding and the scheduler's Event for every pod, plus the gate
	// removal for the pods that were gated: pods placed at admission (their
	// images already known) and pods pinned by nodeSelector never are.
	m := rep.Main
	if m.PlacedAtAdmissionPods == 0 {
		t.Errorf("no pod placed at admission (placements %v)", m.Placements)
	}
	gated := float64(m.Pods-m.PlacedAtAdmissionPods-m.NeverGatedPods) / float64(m.Pods)
	if want := 3 + gated; math.Abs(c.APIWritesPerPod-want) > 0.25 {
		t.Errorf("apiserver writes per pod = %.2f, want about %.2f (3 + %.2f gated)", c.APIWritesPerPod, want, gated)
	}
	noChildrenLeft(t)
	t.Logf("smoke as processes: %.1f CPU-s per 1k pods, %.2f writes per pod", c.CPUSecondsPer1kPods, c.APIWritesPerPod)
}

// loadShipped loads scenarios/<name>.yaml.
func loadShipped(t *testing.T, name string) *scenario.Loaded {
	t.Helper()
	loaded, err := scenario.Load(filepath.Join("..", "..", "..", "scenarios", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// noChildrenLeft fails the test for every process the run left running.
func noChildrenLeft(t *testing.T) {
	t.Helper()
	for _, p := range procfs.Children(os.Getpid()) {
		t.Errorf("%s (pid %d) still running after the run", p.Name, p.PID)
	}
}

// buildBinaries builds the named commands (archgate, simulator) into a
// temporary directory and returns it.
func buildBinaries(t *testing.T, names ...string) string {
	t.Helper()
	bin := t.TempDir()
	root := filepath.Join("..", "..", "..")
	pkgs := map[string]string{"archgate": "./operator/cmd/archgate", "simulator": "./simulator/cmd/simulator"}
	for _, name := range names {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkgs[name])
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", name, err, out)
		}
	}
	return bin
}
