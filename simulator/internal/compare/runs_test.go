package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/archgate/archgate/simulator/internal/report"
)

// runsOf builds one report per value of webhook CPU per 1,000 pods, on one
// machine at one speed.
func runsOf(cpu ...float64) []*report.Report {
	var out []*report.Report
	for _, c := range cpu {
		out = append(out, &report.Report{
			Scenario:    report.ScenarioInfo{Name: "s"},
			Environment: report.Environment{Cores: 2, CPUModel: "AMD EPYC", KubernetesVersion: "v1.37.1"},
			Main: &report.Pass{Name: "main", Throughput: 50, CalibrationSeconds: 40e-6,
				Cost: &report.Cost{Components: []report.ComponentCost{{Name: "webhook", CPUSecondsPer1kPods: c}}}},
			Passed: true,
		})
	}
	return out
}

func TestCompareRuns(t *testing.T) {
	for name, tc := range map[string]struct {
		base, head  []*report.Report
		edit        func(head []*report.Report)
		wantVerdict string
		wantErr     string
	}{
		"A/A: the same spread is no change": {
			base: runsOf(0.70, 0.72, 0.69, 0.71, 0.73), head: runsOf(0.71, 0.70, 0.73, 0.69, 0.72),
			wantVerdict: "no change",
		},
		"5% slower with 2% spread: a regression": {
			base: runsOf(0.700, 0.705, 0.702, 0.698, 0.703), head: runsOf(0.735, 0.740, 0.737, 0.733, 0.738),
			wantVerdict: "regression",
		},
		"5% slower with 10% spread: not detectable": {
			base: runsOf(0.66, 0.70, 0.73, 0.68, 0.72), head: runsOf(0.69, 0.74, 0.70, 0.76, 0.72),
			wantVerdict: "no change",
		},
		"5% faster: an improvement": {
			base: runsOf(0.700, 0.705, 0.702, 0.698, 0.703), head: runsOf(0.665, 0.668, 0.667, 0.663, 0.669),
			wantVerdict: "improvement",
		},
		"every run the same value: no change": {
			base: runsOf(0.70, 0.70, 0.70), head: runsOf(0.70, 0.70, 0.70), wantVerdict: "no change",
		},
		"two runs a side cannot reach alpha": {
			base: runsOf(0.70, 0.71), head: runsOf(0.90, 0.91), wantVerdict: "inconclusive",
		},
		"another machine is refused": {
			base: runsOf(0.70, 0.71), head: runsOf(0.70, 0.71),
			edit:    func(h []*report.Report) { h[1].Environment.CPUModel = "Intel Xeon" },
			wantErr: "different machines",
		},
		"another speed is refused": {
			base: runsOf(0.70, 0.71), head: runsOf(0.70, 0.71),
			edit: func(h []*report.Report) {
				for _, r := range h {
					r.Main.CalibrationSeconds = 46e-6
				}
			},
			wantErr: "different speeds",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.edit != nil {
				tc.edit(tc.head)
			}
			res, err := CompareRuns(tc.base, tc.head, RunsOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var e *Effect
			for i := range res.Effects {
				if res.Effects[i].Name == "cost.cpuPer1kPods.webhook" {
					e = &res.Effects[i]
				}
			}
			if e == nil {
				t.Fatalf("no effect for the webhook's CPU in %+v", res.Effects)
			}
			if e.Verdict != tc.wantVerdict {
				t.Errorf("verdict %q (p=%.4f, ratio %.3f [%.3f, %.3f]), want %q", e.Verdict, e.P, e.Ratio, e.Lo, e.Hi, tc.wantVerdict)
			}
			if !math.IsNaN(e.Lo) && !(e.Lo <= e.Ratio && e.Ratio <= e.Hi) {
				t.Errorf("estimate %.3f outside its interval [%.3f, %.3f]", e.Ratio, e.Lo, e.Hi)
			}
			if e.Verdict == "regression" || e.Verdict == "improvement" {
				if e.Lo <= 1 && e.Hi >= 1 {
					t.Errorf("significant change whose interval [%.3f, %.3f] holds no change", e.Lo, e.Hi)
				}
			}
		})
	}
}

// TestMinDetectable checks that the smallest detectable change follows the
// base runs' spread: tight runs see a few percent, loose runs do not.
func TestMinDetectable(t *testing.T) {
	tight := minDetectable([]float64{1.00, 1.01, 1.005, 0.995, 1.002}, 0.05)
	loose := minDetectable([]float64{0.9, 1.1, 1.0, 0.95, 1.05}, 0.05)
	if !(tight > 0 && tight < 0.03) {
		t.Errorf("tight runs: smallest detectable change %.3f, want within (0, 3%%)", tight)
	}
	if !(loose > 0.15) {
		t.Errorf("loose runs: smallest detectable change %.3f, want above 15%%", loose)
	}
	if got := minDetectable([]float64{1, 1.1}, 0.05); !math.IsNaN(got) {
		t.Errorf("two runs: smallest detectable change %.3f, want none (NaN)", got)
	}
}
