package runner

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// TestAssembleOracle builds reports from crafted pass results over the real
// smoke workload: its plan puts single-architecture pods on a
// four-architecture cluster, so a baseline without misplaced pods means the
// oracle is blind and the run must fail.
func TestAssembleOracle(t *testing.T) {
	loaded, err := scenario.Load(filepath.Join("..", "..", "..", "scenarios", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan := workload.Generate(loaded.Scenario, loaded.Catalog)
	risk := workload.BaselineRisk(plan.Pods, nodesByArch(loaded.Scenario))
	if risk.Expected < report.MinExpectedMisplaced {
		t.Fatalf("smoke's workload expects %.1f baseline misplacements, the test needs at least %d", risk.Expected, report.MinExpectedMisplaced)
	}
	for name, tc := range map[string]struct {
		baselineMisplaced int
		errors            []string
		wantFailure       string
	}{
		"a baseline with misplaced pods proves the oracle": {baselineMisplaced: 40},
		"a baseline with none fails the run":               {wantFailure: "oracle: the baseline shows 0 misplaced pods"},
		"a run error fails the run":                        {baselineMisplaced: 40, errors: []string{"boom"}, wantFailure: "run error: boom"},
	} {
		t.Run(name, func(t *testing.T) {
			res := results{
				baseline: &passResult{pass: &report.Pass{Name: "baseline", Pods: 300, BoundPods: 300, MisplacedPods: tc.baselineMisplaced}},
				main:     &passResult{pass: &report.Pass{Name: "main", Operator: true, Pods: 300, BoundPods: 300}},
				errors:   tc.errors,
			}
			rep := assemble(assembly{scenario: report.ScenarioInfo{Name: "smoke"}, start: time.Now(), results: res, risk: risk})
			if rep.Oracle == nil || rep.Oracle.BaselineMisplaced != tc.baselineMisplaced {
				t.Fatalf("oracle %+v, want the baseline's %d misplaced pods", rep.Oracle, tc.baselineMisplaced)
			}
			failed := strings.Join(rep.Failures, "\n")
			if tc.wantFailure == "" {
				if !rep.Passed {
					t.Errorf("failed: %s", failed)
				}
				return
			}
			if rep.Passed || !strings.Contains(failed, tc.wantFailure) {
				t.Errorf("passed %v, failures %q; want a failure containing %q", rep.Passed, failed, tc.wantFailure)
			}
			t.Logf("verdict: FAILED: %s", failed)
		})
	}
}
