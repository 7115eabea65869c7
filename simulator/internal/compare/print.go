package compare

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// BaseFailed is true when the base run failed: nothing statistical can be
// judged against it (see Result.Failed).
func (res Result) BaseFailed() bool {
	for _, f := range res.Failed {
		if strings.HasPrefix(f, "base ") {
			return true
		}
	}
	return false
}

// Named is a report and the name it is shown with (its file, or the commit it was run at).
type Named struct {
	Name   string
	Report *report.Report
}

// Print writes the comparison as a table and a closing verdict line.
func Print(w io.Writer, base, head Named, res Result, o Options) {
	o = o.withDefaults()
	fmt.Fprintf(w, "scenario %s\n", head.Report.Scenario.Name)
	for _, side := range []struct {
		label string
		Named
	}{{"base", base}, {"head", head}} {
		r := side.Report
		fmt.Fprintf(w, "%s: %s  (commit %.12s%s, %s)\n", side.label, side.Name, r.Environment.Commit, dirty(r), r.StartedAt.Format("2006-01-02 15:04Z"))
	}
	if base.Report.Scenario.SHA256 != head.Report.Scenario.SHA256 {
		fmt.Fprintf(w, "note: the scenario files differ between the two runs\n")
	}
	for _, f := range res.Failed {
		fmt.Fprintf(w, "FAILED RUN: %s\n", f)
	}

	fmt.Fprintf(w, "\n%-30s %12s %12s %9s  %-30s %s\n", "metric", "base", "head", "change", "test", "verdict")
	for _, r := range res.Rows {
		fmt.Fprintf(w, "%-30s %12s %12s %9s  %-30s %s\n", r.Metric, scenario.FormatValue(r.Unit, r.Base),
			scenario.FormatValue(r.Unit, r.Head), formatChange(r.Change), formatTest(r), r.Verdict)
	}
	fmt.Fprintf(w, "\nverdicts: correctness (failed run, misplaced/gated/unbound pods, recorder drops): any increase;\n"+
		"  p50: Mann–Whitney U p < %.3g on per-pod samples; p90/p99: %.0f%% bootstrap interval of head − base excludes 0;\n"+
		"  throughput.backlog: Welch t-test p < alpha on the mean bind count of seconds with a backlog;\n"+
		"  and |change| ≥ %.0f%% (≥ %s for latencies)\n",
		o.Alpha, (1-o.Alpha)*100, o.Threshold*100, scenario.FormatValue(scenario.UnitDuration, o.MinLatencyDelta))
	fmt.Fprintln(w, "result: "+summary(res, o))
}

// summary is the closing verdict: regressions first (a correctness
// regression counts even on a disturbed machine), then what keeps the
// comparison from judging.
func summary(res Result, o Options) string {
	var parts []string
	if res.Regressions > 0 {
		parts = append(parts, fmt.Sprintf("%d regression(s): %s", res.Regressions, strings.Join(res.names(VerdictWorse), ", ")))
	}
	switch {
	case res.BaseFailed():
		parts = append(parts, "refused: the base run failed, statistical differences not judged; compare against a passing run")
	case len(res.Disturbed) > 0:
		parts = append(parts, fmt.Sprintf("inconclusive: other work disturbed %s; rerun on a quiet machine (threshold %.0f%%, --max-foreign-cpu)",
			strings.Join(res.Disturbed, " and "), o.MaxForeignCPU*100))
	}
	if res.Improvements > 0 {
		parts = append(parts, fmt.Sprintf("%d improvement(s): %s", res.Improvements, strings.Join(res.names(VerdictBetter), ", ")))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, "; ")
}

func (res Result) names(verdict string) []string {
	var out []string
	for _, r := range res.Rows {
		if r.Verdict == verdict {
			out = append(out, r.Metric)
		}
	}
	return out
}

func formatTest(r Row) string {
	switch r.Test {
	case TestU, TestWelch:
		return fmt.Sprintf("%s p=%.3g", r.Test, r.P)
	case TestBootstrap:
		return fmt.Sprintf("Δ in [%s, %s]", signed(r.Unit, r.Lo), signed(r.Unit, r.Hi))
	}
	return r.Test
}

func signed(u scenario.Unit, x float64) string {
	if x >= 0 {
		return "+" + scenario.FormatValue(u, x)
	}
	return "-" + scenario.FormatValue(u, -x)
}

func dirty(r *report.Report) string {
	if r.Environment.Dirty {
		return " dirty"
	}
	return ""
}

func formatChange(c float64) string {
	switch {
	case math.IsNaN(c):
		return ""
	case math.IsInf(c, 0):
		return "new"
	case c == 0:
		return "0%"
	}
	return fmt.Sprintf("%+.1f%%", c*100)
}
