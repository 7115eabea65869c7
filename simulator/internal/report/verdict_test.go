package report

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestVerdict feeds crafted reports, one per way a run can fail, and checks
// the reason the verdict gives; a clean report passes.
func TestVerdict(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(r *Report)
		want []string
	}{
		"clean": {edit: func(*Report) {}},
		"run error": {
			edit: func(r *Report) { r.Errors = []string{"main pass: pod watch ended early"} },
			want: []string{"run error: main pass: pod watch ended early"},
		},
		"no main pass": {
			edit: func(r *Report) { r.Main = nil; r.Baseline = nil },
			want: []string{"the main pass did not complete"},
		},
		"deadline hit": {
			edit: func(r *Report) {
				r.Main.DeadlineHit, r.Main.UnboundAtEnd, r.Main.Schedulable, r.Main.PendingByDesign = true, 12, 1198, 2
			},
			want: []string{"main pass hit its deadline: 1000 of 1200 planned pods created, 12 not bound (2 Pending by design)"},
		},
		"timeline event not reached": {
			edit: func(r *Report) {
				r.Timeline = append(r.Timeline, AppliedEvent{Action: "registryOutage", AtSeconds: 30, Error: "not reached: the pass ended first"})
			},
			want: []string{"timeline registryOutage at 30.0s: not reached: the pass ended first"},
		},
		"outage without effect": {
			edit: func(r *Report) {
				r.Timeline = append(r.Timeline, AppliedEvent{Action: "registryOutage", AtSeconds: 2,
					Error: "no observable effect: the registry injected no fault during the window (no request reached it)"})
			},
			want: []string{"timeline registryOutage at 2.0s: no observable effect: the registry injected no fault during the window (no request reached it)"},
		},
		"blind oracle": {
			edit: func(r *Report) { r.Oracle = &Oracle{AtRiskPods: 400, ExpectedMisplaced: 180, BaselineMisplaced: 0} },
			want: []string{"oracle: the baseline shows 0 misplaced pods where the workload should produce about 180 (400 pods at risk): the misplaced-pod count cannot be trusted"},
		},
		"oracle that sees": {
			edit: func(r *Report) { r.Oracle = &Oracle{AtRiskPods: 400, ExpectedMisplaced: 180, BaselineMisplaced: 150} },
		},
		"too few pods at risk to demand a misplacement": {
			edit: func(r *Report) { r.Oracle = &Oracle{AtRiskPods: 3, ExpectedMisplaced: 1.5} },
		},
		"missed and unmeasured expectations": {
			edit: func(r *Report) {
				r.Expectations = []Outcome{{Check: "misplacedPods == 0", Unit: "count", Value: 3, Measured: true},
					{Check: "failover.crash < 20s", Unit: "duration"}, {Check: "gatedAtEnd == 0", Measured: true, Passed: true}}
			},
			want: []string{"expectation `misplacedPods == 0`: measured 3", "expectation `failover.crash < 20s`: not measured by this run"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := sample(1)
			r.Expectations = []Outcome{{Check: "gatedAtEnd == 0", Measured: true, Passed: true}}
			tc.edit(r)
			r.Judge()
			if diff := cmp.Diff(tc.want, r.Failures); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
			if r.Passed != (len(tc.want) == 0) {
				t.Errorf("passed = %v with failures %v", r.Passed, r.Failures)
			}
			var text, md strings.Builder
			if r.Main != nil {
				r.WriteText(&text)
				if err := r.WriteMarkdown(&md, Files{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.want {
				if r.Main != nil && (!strings.Contains(text.String(), f) || !strings.Contains(md.String(), f)) {
					t.Errorf("the console or Markdown verdict lacks %q", f)
				}
			}
			if len(tc.want) > 0 {
				t.Logf("verdict: %s", lastLines(text.String(), len(tc.want)+1))
			}
		})
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// failingWriter fails every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

var _ io.Writer = failingWriter{}

func TestWriteMarkdownReturnsWriteErrors(t *testing.T) {
	err := sample(1).WriteMarkdown(failingWriter{}, Files{})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("WriteMarkdown on a failing writer: %v, want the write error", err)
	}
}

// TestEvaluateNotJudged checks the scenario's headroom: a latency or rate
// check on a pass above the utilization bound fails as "machine saturated"
// whatever its value; a ratio between passes whose calibrations differ by
// more than the speed bound fails as "machine unsteady" when the change
// could flip its verdict (and whatever its value beyond three times the
// bound); other checks are
// judged as usual; and a run whose only failures are such checks is called
// not judged, not failed by the product.
func TestEvaluateNotJudged(t *testing.T) {
	check := func(text string) scenario.Check {
		c, err := scenario.ParseCheck(text)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for name, tc := range map[string]struct {
		headroom                  *scenario.HeadroomSpec
		mainUtil, handwrittenUtil float64
		handwrittenCalibration    float64 // × the main pass's; 0 keeps sample's
		handwrittenHarness        float64 // the handwritten pass's harness CPU per pod × the main pass's; 0 keeps sample's
		checks                    []string
		wantNotJudged             map[string]string // check → reason it names
		wantReportNotJudged       bool
		wantPassed                bool
	}{
		"no headroom set: judged as measured": {
			mainUtil: 0.98, handwrittenCalibration: 1.5, checks: []string{"create.p99 < 1s", "misplacedPods == 0", "handwrittenRatio.cost.cpuPer1kPods < 10"}, wantPassed: true,
		},
		"within headroom": {
			headroom: &scenario.HeadroomSpec{MaxUtilization: 0.6, MaxSpeedChange: 0.05}, mainUtil: 0.55, handwrittenUtil: 0.5, handwrittenCalibration: 1.04,
			checks: []string{"create.p99 < 1s", "handwrittenRatio.create.p99 <= 2", "handwrittenRatio.cost.cpuPer1kPods < 10"}, wantPassed: true,
		},
		"main pass above: its latencies and ratios not judged, counts judged": {
			headroom: &scenario.HeadroomSpec{MaxUtilization: 0.6}, mainUtil: 0.93, handwrittenUtil: 0.5,
			checks:        []string{"create.p99 < 1s", "handwrittenRatio.create.p99 <= 2", "misplacedPods == 0", "throughput >= 90", "cost.cpuPer1kPods < 100s"},
			wantNotJudged: map[string]string{"create.p99 < 1s": "machine saturated", "handwrittenRatio.create.p99 <= 2": "machine saturated", "throughput >= 90": "machine saturated"}, wantReportNotJudged: true,
		},
		"reference pass above: only the ratio to it and its own figures": {
			headroom: &scenario.HeadroomSpec{MaxUtilization: 0.6}, mainUtil: 0.5, handwrittenUtil: 0.7,
			checks:        []string{"create.p99 < 1s", "handwrittenRatio.create.p99 <= 2", "handwritten.create.p99 < 1s"},
			wantNotJudged: map[string]string{"handwrittenRatio.create.p99 <= 2": "machine saturated", "handwritten.create.p99 < 1s": "machine saturated"}, wantReportNotJudged: true,
		},
		"saturated and a product failure: failed, not 'not judged'": {
			headroom: &scenario.HeadroomSpec{MaxUtilization: 0.6}, mainUtil: 0.93,
			checks:        []string{"create.p99 < 1s", "misplacedPods < 0"},
			wantNotJudged: map[string]string{"create.p99 < 1s": "machine saturated"},
		},
		"speed changed between passes: every ratio to that pass the change could flip, latency or cost, not judged": {
			headroom: &scenario.HeadroomSpec{MaxUtilization: 0.6, MaxSpeedChange: 0.05}, mainUtil: 0.5, handwrittenUtil: 0.5, handwrittenCalibration: 1.07,
			checks:        []string{"create.p99 < 1s", "handwrittenRatio.create.p99 <= 2", "handwrittenRatio.cost.cpuPer1kPods < 2.1", "handwrittenRatio.calibration < 10", "ratio.create.p99 < 10"},
			wantNotJudged: map[string]string{"handwrittenRatio.create.p99 <= 2": "machine unsteady", "handwrittenRatio.cost.cpuPer1kPods < 2.1": "machine unsteady"}, wantReportNotJudged: true,
		},
		"faster as well as slower": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}, handwrittenCalibration: 0.9,
			checks:        []string{"handwrittenRatio.cost.cpuPer1kPods < 2.1"},
			wantNotJudged: map[string]string{"handwrittenRatio.cost.cpuPer1kPods < 2.1": "machine unsteady"}, wantReportNotJudged: true,
		},
		"speed changed, a ratio the change cannot bring to its threshold: passed": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}, handwrittenCalibration: 1.07,
			checks: []string{"handwrittenRatio.cost.cpuPer1kPods < 10", "handwrittenRatio.create.p99 >= 1.5"}, wantPassed: true,
		},
		"speed changed, a ratio the change cannot bring under its threshold: failed, not 'not judged'": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}, handwrittenCalibration: 1.07,
			checks: []string{"handwrittenRatio.cost.cpuPer1kPods < 1.5"},
		},
		"speed changed beyond three times the bound: no ratio judged": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}, handwrittenCalibration: 1.2,
			checks:        []string{"handwrittenRatio.cost.cpuPer1kPods < 10"},
			wantNotJudged: map[string]string{"handwrittenRatio.cost.cpuPer1kPods < 10": "machine unsteady"}, wantReportNotJudged: true,
		},
		"speed changed beyond three times the bound: the speed-corrected CPU ratio still judged": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}, handwrittenCalibration: 1.2,
			checks: []string{"handwrittenRatio.cost.relativeCPU <= 1.35"}, wantPassed: true,
		},
		"speed changed beyond three times the bound: the speed-corrected CPU ratio fails as measured": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}, handwrittenCalibration: 1.2,
			checks: []string{"handwrittenRatio.cost.relativeCPU <= 1.1"},
		},
		"harness CPU changed between passes: latency ratios the change could flip not judged, the calibration steady": {
			headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05, MaxHarnessChange: 0.35}, handwrittenHarness: 1 / 1.56,
			checks:        []string{"handwrittenRatio.create.p99 <= 2.5", "handwrittenRatio.throughput >= 0.9", "handwrittenRatio.cost.relativeCPU <= 1.35", "create.p99 < 1s"},
			wantNotJudged: map[string]string{"handwrittenRatio.create.p99 <= 2.5": "machine unsteady during the passes", "handwrittenRatio.throughput >= 0.9": "the harness"}, wantReportNotJudged: true,
		},
		"harness CPU changed, a latency ratio the change cannot flip: judged": {
			headroom: &scenario.HeadroomSpec{MaxHarnessChange: 0.35}, handwrittenHarness: 1.5,
			checks: []string{"handwrittenRatio.create.p99 <= 10"}, wantPassed: true,
		},
		"harness CPU within the bound: judged": {
			headroom: &scenario.HeadroomSpec{MaxHarnessChange: 0.35}, handwrittenHarness: 1.3,
			checks: []string{"handwrittenRatio.create.p99 <= 2.5"}, wantPassed: true,
		},
		"saturated and unsteady: both reasons named": {
			headroom: &scenario.HeadroomSpec{MaxUtilization: 0.6, MaxSpeedChange: 0.05}, mainUtil: 0.9, handwrittenCalibration: 1.1,
			checks:        []string{"handwrittenRatio.create.p99 <= 2"},
			wantNotJudged: map[string]string{"handwrittenRatio.create.p99 <= 2": "machine saturated: the main pass used 90% of 2 cores, above the 60% a latency verdict needs; machine unsteady"}, wantReportNotJudged: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := sample(1)
			r.Scenario.Spec = &scenario.Scenario{Headroom: tc.headroom}
			r.Environment.Cores = 2
			r.Main.Cost.Utilization = tc.mainUtil
			r.Handwritten.Cost.Utilization = tc.handwrittenUtil
			if tc.handwrittenCalibration > 0 {
				r.Handwritten.CalibrationSeconds = r.Main.CalibrationSeconds * tc.handwrittenCalibration
			}
			if tc.handwrittenHarness > 0 {
				main, _ := r.Main.Cost.Component(ComponentHarness)
				i := slices.IndexFunc(r.Handwritten.Cost.Components, func(c ComponentCost) bool { return c.Name == ComponentHarness })
				r.Handwritten.Cost.Components[i].CPUSecondsPer1kPods = main.CPUSecondsPer1kPods * tc.handwrittenHarness
			}
			var checks []scenario.Check
			for _, c := range tc.checks {
				checks = append(checks, check(c))
			}
			r.Expectations = Evaluate(r, checks)
			r.Judge()
			for _, o := range r.Expectations {
				want, ok := tc.wantNotJudged[o.Check]
				if ok != (o.NotJudged != "") || !strings.Contains(o.NotJudged, want) {
					t.Errorf("%s: not judged %q, want a reason containing %q (%v)", o.Check, o.NotJudged, want, ok)
				}
				if o.NotJudged != "" && o.Passed {
					t.Errorf("%s: not judged but passed", o.Check)
				}
			}
			if r.NotJudged != tc.wantReportNotJudged || r.Passed != tc.wantPassed {
				t.Errorf("report not judged %v passed %v, want %v %v; failures %v", r.NotJudged, r.Passed, tc.wantReportNotJudged, tc.wantPassed, r.Failures)
			}
		})
	}
}

// TestMarkdownTablesKeepTheirColumns checks that every row of every table in
// the summary has as many cells as its header: a cell holding a "|" would
// shift the rest of its row.
func TestMarkdownTablesKeepTheirColumns(t *testing.T) {
	r := sample(1)
	for _, p := range r.Passes() {
		p.StartLatency, p.RestLatency = p.Latency, p.Latency
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md, Files{}); err != nil {
		t.Fatal(err)
	}
	cells := func(line string) int { return strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") }
	header := -1
	for _, line := range strings.Split(md.String(), "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			header = -1
		case header < 0:
			header = cells(line)
		case cells(line) != header:
			t.Errorf("row with %d separators under a header with %d: %s", cells(line), header, line)
		}
	}
}

// TestRejudge: a report's verdict is a function of the report, so one
// written under another rule is judged again from its own figures, checks,
// goals and headroom.
func TestRejudge(t *testing.T) {
	r := sample(1)
	r.Scenario.Spec = &scenario.Scenario{Headroom: &scenario.HeadroomSpec{MaxSpeedChange: 0.05}}
	r.Handwritten.CalibrationSeconds = r.Main.CalibrationSeconds * 1.053
	r.Expectations = []Outcome{
		{Check: "handwrittenRatio.cost.cpuPer1kPods <= 10", Goal: "<= 1.5", NotJudged: "machine unsteady (an older rule)"},
		{Check: "misplacedPods == 0", Passed: true, Measured: true},
	}
	r.Judge()
	if r.Passed || !r.NotJudged {
		t.Fatalf("set-up: want a not-judged report, got passed %v not judged %v", r.Passed, r.NotJudged)
	}
	if err := r.Rejudge(); err != nil {
		t.Fatal(err)
	}
	o := r.Expectations[0]
	if !r.Passed || r.NotJudged || !o.Passed || o.Value != 2 || o.Goal != "<= 1.5" || o.GoalMet {
		t.Errorf("rejudged: passed %v not judged %v; outcome %+v", r.Passed, r.NotJudged, o)
	}
	r.Expectations = append(r.Expectations, Outcome{Check: "noSuchMetric < 1"})
	if err := r.Rejudge(); err == nil || !strings.Contains(err.Error(), "noSuchMetric") {
		t.Errorf("a check this simulator cannot parse: err = %v", err)
	}
}
