package repeat

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// notJudged marks r as a run the machine could not judge.
func notJudged(r *report.Report) *report.Report {
	r.NotJudged = true
	return r
}

// run builds a report of scenario name whose main pass has the given
// throughput and create p99, and one expectation on create.p99.
func run(name string, throughput, createP99 float64, passed bool) *report.Report {
	r := &report.Report{
		Scenario: report.ScenarioInfo{Name: name},
		Main: &report.Pass{Name: "main", Throughput: throughput,
			Latency: map[string]stats.Summary{"create": {N: 10, P50: createP99 / 2, P99: createP99}}},
		Expectations: []report.Outcome{{Check: "create.p99 < 1s", Metric: "create.p99", Unit: "duration", Measured: true, Passed: passed}},
		Passed:       passed,
	}
	if !passed {
		r.Failures = []string{"expectation `create.p99 < 1s`"}
	}
	return r
}

func TestSummarize(t *testing.T) {
	for name, tc := range map[string]struct {
		reports       []*report.Report
		want          map[string]Figure
		wantPassed    int
		wantNotJudged int
		wantErr       string
	}{
		"five runs": {
			reports: []*report.Report{run("s", 100, 0.02, true), run("s", 98, 0.025, true), run("s", 99, 0.021, true), run("s", 101, 0.03, false), run("s", 100, 0.022, true)},
			want: map[string]Figure{
				"throughput": {Median: 100, Min: 98, Max: 101, Spread: 101.0/98 - 1, JudgedSpread: 101.0/98 - 1},
				"create.p99": {Median: 0.022, Min: 0.02, Max: 0.03, Spread: 0.5, JudgedSpread: 0.5},
				"create.p50": {Median: 0.011, Min: 0.01, Max: 0.015, Spread: 0.5, JudgedSpread: 0.5},
			},
			wantPassed: 4,
		},
		"a not-judged run widens the spread, not the judged runs' spread": {
			reports: []*report.Report{run("s", 100, 0.02, true), notJudged(run("s", 100, 0.04, false)), run("s", 100, 0.022, true)},
			want: map[string]Figure{
				"throughput": {Median: 100, Min: 100, Max: 100, Spread: 0, JudgedSpread: 0},
				"create.p99": {Median: 0.022, Min: 0.02, Max: 0.04, Spread: 1, JudgedSpread: 0.1},
				"create.p50": {Median: 0.011, Min: 0.01, Max: 0.02, Spread: 1, JudgedSpread: 0.1},
			},
			wantPassed: 2, wantNotJudged: 1,
		},
		"a zero minimum has no spread": {
			reports: []*report.Report{run("s", 0, 0.02, true), run("s", 10, 0.02, true)},
			want: map[string]Figure{
				"throughput": {Median: 5, Min: 0, Max: 10, Spread: math.NaN(), JudgedSpread: math.NaN()},
				"create.p99": {Median: 0.02, Min: 0.02, Max: 0.02, Spread: 0, JudgedSpread: 0},
				"create.p50": {Median: 0.01, Min: 0.01, Max: 0.01, Spread: 0, JudgedSpread: 0},
			},
			wantPassed: 2,
		},
		"different scenarios": {
			reports: []*report.Report{run("s", 100, 0.02, true), run("t", 100, 0.02, true)},
			wantErr: "report 2 is of scenario t, not s",
		},
		"nothing": {wantErr: "no reports"},
	} {
		t.Run(name, func(t *testing.T) {
			sum, err := Summarize(tc.reports)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sum.Passed != tc.wantPassed || sum.NotJudged != tc.wantNotJudged || sum.Runs != len(tc.reports) {
				t.Errorf("passed %d, not judged %d of %d, want %d, %d of %d", sum.Passed, sum.NotJudged, sum.Runs, tc.wantPassed, tc.wantNotJudged, len(tc.reports))
			}
			got := map[string]Figure{}
			for _, f := range sum.Figures {
				got[f.Name] = Figure{Median: f.Median, Min: f.Min, Max: f.Max, Spread: f.Spread, JudgedSpread: f.JudgedSpread}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
			var md strings.Builder
			sum.WriteMarkdown(&md, nil)
			if !strings.Contains(md.String(), "| `create.p99` |") {
				t.Errorf("markdown lacks the create.p99 row:\n%s", md.String())
			}
			if got := strings.Contains(md.String(), "spread, judged runs"); got != (tc.wantNotJudged > 0) {
				t.Errorf("markdown has the judged-runs column %v, want it with not-judged runs only:\n%s", got, md.String())
			}
		})
	}
}
