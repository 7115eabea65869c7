package compare

import (
	"math"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// latencyFamilies are the per-pod samples a report keeps.
var latencyFamilies = []string{"gateHold", "schedule", "total", "create"}

// tailQuantiles are the tails judged with a bootstrap interval.
var tailQuantiles = []struct {
	name string
	q    float64
}{{"p90", 0.90}, {"p99", 0.99}}

// latencyRows judges each latency family of a pass: the median with a
// Mann–Whitney U test, the tails with a bootstrap interval.
func latencyRows(prefix string, base, head *report.Pass, o Options) []Row {
	var out []Row
	for _, fam := range latencyFamilies {
		a, b := base.Samples.Seconds(fam), head.Samples.Seconds(fam)
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		out = append(out, medianRow(prefix+fam+".p50", a, b, o))
		for _, t := range tailQuantiles {
			out = append(out, tailRow(prefix+fam+"."+t.name, t.q, a, b, o))
		}
	}
	return out
}

// medianRow tests the medians of two latency samples: a Mann–Whitney U test of the samples and
// the relative change of their medians, counted when the medians also differ by at least
// MinLatencyDelta.
func medianRow(name string, a, b []float64, o Options) Row {
	base, head := stats.Median(a), stats.Median(b)
	row := Row{Metric: name, Unit: scenario.UnitDuration, Base: base, Head: head, Change: rel(base, head), P: math.NaN()}
	if len(a) < 2 || len(b) < 2 {
		row.Verdict = VerdictUntested
		return row
	}
	mw := stats.MannWhitneyU(a, b)
	row.P, row.Test = mw.P, TestU
	row.Verdict, row.Regression = verdict(false, mw.P < o.Alpha, row.Change, o)
	if math.Abs(head-base) < o.MinLatencyDelta {
		row.Verdict, row.Regression = VerdictSame, false
	}
	return row
}

// tailRow judges a latency quantile: significant when the bootstrap
// interval of its difference excludes zero, counted when the change is
// also at least Threshold and MinLatencyDelta.
func tailRow(name string, q float64, a, b []float64, o Options) Row {
	d := stats.BootstrapQuantileDiff(a, b, q, stats.BootstrapOptions{Resamples: o.Resamples, Confidence: 1 - o.Alpha, Seed: 1})
	row := Row{Metric: name, Unit: scenario.UnitDuration, Base: d.A, Head: d.B, Change: rel(d.A, d.B), P: math.NaN(), Lo: d.Lo, Hi: d.Hi}
	if len(a) < 2 || len(b) < 2 {
		row.Verdict = VerdictUntested
		return row
	}
	row.Test = TestBootstrap
	significant := (d.Lo > 0 || d.Hi < 0) && math.Abs(d.Diff) >= o.MinLatencyDelta
	row.Verdict, row.Regression = verdict(false, significant, row.Change, o)
	return row
}
