// Package compare compares two reports of one scenario, metric by metric:
// both values, the relative change, a Mann–Whitney U p-value where the
// reports hold per-pod (or per-second) samples, and a verdict.
//
// With thousands of pods, tiny systematic differences between two runs on a
// shared 2-core machine (another build, page cache, CPU frequency) are
// statistically significant even when nothing changed in the code. So a
// change is only called a regression or an improvement when it is both
// significant (p < Alpha) and large (|relative change of the median| ≥
// Threshold): significance alone would fail A/A runs, size alone would
// fail on noise of small samples.
package compare

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// Defaults of Options.
const (
	// DefaultAlpha is the significance level: 1%, as a regression gate
	// should rarely fire by chance.
	DefaultAlpha = 0.01
	// DefaultThreshold is the smallest relative change of a median that
	// counts. Run-to-run noise of the figures on the 2-core machines is
	// ±20–30% (DESIGN §5 spike figures); 25% sits in that band, so A/A
	// stays quiet while a real slowdown of a quarter or more is caught.
	DefaultThreshold = 0.25

	// DefaultMinLatencyDelta is the smallest absolute change of a median
	// latency that counts. On a loaded 2-core machine medians of a few
	// milliseconds halve or double between identical runs (CPU scheduling
	// of the apiserver, not the code); a change below 10 ms is also below
	// what a pod's start-up budget (5 s, DESIGN §6) can notice.
	DefaultMinLatencyDelta = 0.010
	// DefaultMaxForeignCPU is the share of the machine's CPU that other
	// work may have used during a run for its figures to be compared. On
	// the shared 2-core machines other engineers' builds took 30–60% at
	// times, and the same commit's smoke medians then moved 10× between
	// runs; an idle machine shows a few per cent.
	DefaultMaxForeignCPU = 0.10
)

// Options tune the verdicts.
type Options struct {
	// Alpha is the significance level.
	Alpha float64
	// Threshold is the minimum relative change of the median.
	Threshold float64
	// MinLatencyDelta is the minimum absolute change of a median latency,
	// in seconds.
	MinLatencyDelta float64
	// MaxForeignCPU is the share of the machine's CPU other work may have
	// used during either run; above it verdicts are inconclusive.
	MaxForeignCPU float64
}

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.MinLatencyDelta == 0 {
		o.MinLatencyDelta = DefaultMinLatencyDelta
	}
	if o.MaxForeignCPU == 0 {
		o.MaxForeignCPU = DefaultMaxForeignCPU
	}
	return o
}

// Verdicts.
const (
	VerdictSame     = "~"
	VerdictWorse    = "worse"
	VerdictBetter   = "better"
	VerdictUntested = "(single value)"
	// VerdictInconclusive replaces worse/better when a run was disturbed.
	VerdictInconclusive = "inconclusive"
	VerdictUnavailable  = "(missing)"
)

// Row is one compared metric.
type Row struct {
	// Metric is the metric's name (see scenario.Metrics).
	Metric string
	// Unit formats the values.
	Unit scenario.Unit
	// Base and Head are the two values (NaN when missing).
	Base, Head float64
	// Change is (Head − Base) / Base.
	Change float64
	// P is the Mann–Whitney U p-value, NaN when untested.
	P float64
	// Tested is true when P comes from samples.
	Tested bool
	// Verdict is ~, worse, better, or a note.
	Verdict string
	// Regression is true for a significant, large change for the worse.
	Regression bool
}

// Result is a comparison.
type Result struct {
	// Rows are the compared metrics.
	Rows []Row
	// Regressions and Improvements count verdicts.
	Regressions, Improvements int
	// Disturbed names the runs other work disturbed (see
	// Options.MaxForeignCPU); their differences are not judged.
	Disturbed []string
}

// Compare compares head against base.
func Compare(base, head *report.Report, o Options) Result {
	o = o.withDefaults()
	var res Result
	for _, r := range []*report.Report{base, head} {
		if share := r.Environment.ForeignCPUShare; share > o.MaxForeignCPU {
			res.Disturbed = append(res.Disturbed, fmt.Sprintf("%s (other work used %.0f%% of the CPU)", r.BaseName(), share*100))
		}
	}
	add := func(row Row) {
		if len(res.Disturbed) > 0 && (row.Verdict == VerdictWorse || row.Verdict == VerdictBetter) {
			row.Verdict, row.Regression = VerdictInconclusive, false
		}
		res.Rows = append(res.Rows, row)
		switch row.Verdict {
		case VerdictWorse:
			res.Regressions++
		case VerdictBetter:
			res.Improvements++
		}
	}
	passes := []struct {
		prefix     string
		base, head *report.Pass
	}{{"", base.Main, head.Main}, {"baseline.", base.Baseline, head.Baseline}}
	for _, p := range passes {
		if p.base == nil || p.head == nil {
			continue
		}
		for _, fam := range []string{"gateHold", "schedule", "total", "create"} {
			a, b := p.base.Samples.Seconds(fam), p.head.Samples.Seconds(fam)
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			row := tested(p.prefix+fam+".p50", scenario.UnitDuration, false, stats.Median(a), stats.Median(b), a, b, o)
			if row.Verdict != VerdictUntested && math.Abs(row.Head-row.Base) < o.MinLatencyDelta {
				row.Verdict, row.Regression = VerdictSame, false
			}
			add(row)
			add(untested(p.prefix+fam+".p99", scenario.UnitDuration, stats.Summarize(a).P99, stats.Summarize(b).P99))
		}
		a, b := activeSeconds(p.base.PerSecond.Bound), activeSeconds(p.head.PerSecond.Bound)
		row := tested(p.prefix+"throughput", scenario.UnitRate, true, p.base.Throughput, p.head.Throughput, a, b, o)
		// The verdict weighs the median per-second rate; the values shown
		// are the whole-pass throughput.
		if len(a) > 1 && len(b) > 1 {
			row.Verdict, row.Regression = verdict(true, rel(stats.Median(a), stats.Median(b)), row.P, o)
		}
		add(row)
	}
	bv, hv := base.Values(), head.Values()
	for _, name := range []string{"misplacedPods", "gatedAtEnd", "unboundAtEnd", "cacheHitRate", "registryRequests",
		"registryRequestsPerMinimum", "inspectionErrors", "recorderDrops", "schedulerSLI.p50", "schedulerSLI.p99",
		"ratio.throughput", "cpuTime", "peakRSS", "peakRSSAll", "wallTime"} {
		b, okb := bv[name]
		h, okh := hv[name]
		if !okb && !okh {
			continue
		}
		info, _ := scenario.Metric(name)
		if !okb {
			b = math.NaN()
		}
		if !okh {
			h = math.NaN()
		}
		add(untested(name, info.Unit, b, h))
	}
	return res
}

// tested builds a row whose verdict comes from a Mann–Whitney U test of the
// samples and the relative change of their medians.
func tested(name string, u scenario.Unit, higherBetter bool, base, head float64, a, b []float64, o Options) Row {
	row := Row{Metric: name, Unit: u, Base: base, Head: head, Change: rel(base, head), P: math.NaN()}
	if len(a) < 2 || len(b) < 2 {
		row.Verdict = VerdictUntested
		return row
	}
	mw := stats.MannWhitneyU(a, b)
	row.P, row.Tested = mw.P, true
	row.Verdict, row.Regression = verdict(higherBetter, rel(stats.Median(a), stats.Median(b)), mw.P, o)
	return row
}

// verdict combines significance and effect size.
func verdict(higherBetter bool, change, p float64, o Options) (string, bool) {
	if math.IsNaN(change) || p >= o.Alpha || math.Abs(change) < o.Threshold {
		return VerdictSame, false
	}
	worse := change > 0
	if higherBetter {
		worse = change < 0
	}
	if worse {
		return VerdictWorse, true
	}
	return VerdictBetter, false
}

func untested(name string, u scenario.Unit, base, head float64) Row {
	row := Row{Metric: name, Unit: u, Base: base, Head: head, Change: rel(base, head), P: math.NaN(), Verdict: VerdictUntested}
	if math.IsNaN(base) || math.IsNaN(head) {
		row.Verdict = VerdictUnavailable
	}
	return row
}

// rel is the relative change from a to b; ±Inf from zero, 0 for 0 → 0.
func rel(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a == b:
		return 0
	case a == 0:
		return math.Copysign(math.Inf(1), b)
	}
	return (b - a) / math.Abs(a)
}

// activeSeconds returns the per-second counts from the first to the last
// non-zero second: the steady part of a pass, without the empty tail.
func activeSeconds(counts []int) []float64 {
	first, last := -1, -1
	for i, c := range counts {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	out := make([]float64, 0, last-first+1)
	for _, c := range counts[first : last+1] {
		out = append(out, float64(c))
	}
	return out
}

// Print writes the comparison as a table and a closing verdict line.
func Print(w io.Writer, base, head *report.Report, baseName, headName string, res Result, o Options) {
	o = o.withDefaults()
	fmt.Fprintf(w, "scenario %s\n", head.Scenario.Name)
	fmt.Fprintf(w, "base: %s  (commit %.12s%s, %s)\n", baseName, base.Environment.Commit, dirty(base), base.StartedAt.Format("2006-01-02 15:04Z"))
	fmt.Fprintf(w, "head: %s  (commit %.12s%s, %s)\n", headName, head.Environment.Commit, dirty(head), head.StartedAt.Format("2006-01-02 15:04Z"))
	if base.Scenario.SHA256 != head.Scenario.SHA256 {
		fmt.Fprintf(w, "note: the scenario files differ between the two runs\n")
	}

	fmt.Fprintf(w, "\n%-28s %14s %14s %9s %9s  %s\n", "metric", "base", "head", "change", "p", "verdict")
	for _, r := range res.Rows {
		p := ""
		if r.Tested {
			p = fmt.Sprintf("%.3g", r.P)
		}
		fmt.Fprintf(w, "%-28s %14s %14s %9s %9s  %s\n", r.Metric, scenario.FormatValue(r.Unit, r.Base),
			scenario.FormatValue(r.Unit, r.Head), formatChange(r.Change), p, r.Verdict)
	}
	fmt.Fprintf(w, "\nverdicts: p < %.3g (Mann–Whitney U, per-pod samples; throughput per-second bind counts) and |Δ median| ≥ %.0f%% (and ≥ %s for latencies)\n",
		o.Alpha, o.Threshold*100, scenario.FormatValue(scenario.UnitDuration, o.MinLatencyDelta))
	switch {
	case len(res.Disturbed) > 0:
		fmt.Fprintf(w, "result: inconclusive, other work disturbed %s; rerun on a quiet machine (threshold %.0f%%, --max-foreign-cpu)\n",
			strings.Join(res.Disturbed, " and "), o.MaxForeignCPU*100)
	case res.Regressions == 0 && res.Improvements == 0:
		fmt.Fprintln(w, "result: no significant change")
	default:
		var parts []string
		if res.Regressions > 0 {
			parts = append(parts, fmt.Sprintf("%d significant regression(s)", res.Regressions))
		}
		if res.Improvements > 0 {
			parts = append(parts, fmt.Sprintf("%d significant improvement(s)", res.Improvements))
		}
		fmt.Fprintf(w, "result: %s\n", strings.Join(parts, ", "))
	}
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
