// Package compare compares two reports of one scenario, metric by metric,
// and says which differences are regressions.
//
// Three kinds of verdict:
//   - Correctness is judged exactly: a failed head run, or any increase of
//     misplaced, gated or unbound pods at the end or of recorder drops, is a
//     hard regression whatever the noise (a user sees every such pod).
//   - Medians are judged with a Mann–Whitney U test on the per-pod samples,
//     tails (p90, p99) with a bootstrap confidence interval of the quantile's
//     difference, throughput with Welch's t-test on the per-second bind
//     counts of the seconds a backlog existed (see throughput.go).
//   - Everything else is shown, not judged.
//
// With thousands of pods, tiny systematic differences between two runs on a
// shared 2-core machine (another build, page cache, CPU frequency) are
// statistically significant even when nothing changed in the code. So a
// statistical change only counts when it is both significant and large
// (|relative change| ≥ Threshold, and ≥ MinLatencyDelta for latencies):
// significance alone would fail A/A runs, size alone would fail on noise of
// small samples.
package compare

import (
	"fmt"
	"math"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Defaults of Options.
const (
	// DefaultAlpha is the significance level: 1%, as a regression gate
	// should rarely fire by chance. Tails use a (1 − Alpha) interval.
	DefaultAlpha = 0.01
	// DefaultThreshold is the smallest relative change that counts. Run-to-
	// run noise of the figures on the 2-core machines is ±20–30% (DESIGN §5
	// spike figures); 25% sits in that band, so A/A stays quiet while a real
	// slowdown of a quarter or more is caught.
	DefaultThreshold = 0.25

	// DefaultMinLatencyDelta is the smallest absolute change of a latency
	// that counts. On a loaded 2-core machine medians of a few milliseconds
	// halve or double between identical runs (CPU scheduling of the
	// apiserver, not the code); a change below 10 ms is also below what a
	// pod's start-up budget (5 s, DESIGN §6) can notice.
	DefaultMinLatencyDelta = 0.010
	// DefaultMaxForeignCPU is the share of the machine's CPU that other
	// work may have used during a run for its figures to be compared. On
	// the shared 2-core machines other engineers' builds took 30–60% at
	// times, and the same commit's smoke medians then moved 10× between
	// runs; an idle machine shows a few per cent.
	DefaultMaxForeignCPU = 0.10
	// DefaultResamples is the number of bootstrap resamples for tails:
	// enough for the 0.5% tails of a 99% interval to rest on 10 values.
	DefaultResamples = 2000
)

// Options tune the verdicts.
type Options struct {
	// Alpha is the significance level.
	Alpha float64
	// Threshold is the minimum relative change.
	Threshold float64
	// MinLatencyDelta is the minimum absolute change of a latency, in
	// seconds.
	MinLatencyDelta float64
	// MaxForeignCPU is the share of the machine's CPU other work may have
	// used during either run; above it statistical verdicts are
	// inconclusive.
	MaxForeignCPU float64
	// Resamples is the number of bootstrap resamples for tails.
	Resamples int
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
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	return o
}

// Verdicts.
const (
	VerdictSame     = "~"
	VerdictWorse    = "worse"
	VerdictBetter   = "better"
	VerdictUntested = "(single value)"
	// VerdictInconclusive replaces a statistical worse/better when a run
	// was disturbed or the base run failed.
	VerdictInconclusive = "inconclusive"
	VerdictUnavailable  = "(missing)"
)

// Test kinds of a row.
const (
	TestNone      = ""
	TestExact     = "exact"     // correctness: any increase counts
	TestU         = "U"         // Mann–Whitney U on samples
	TestBootstrap = "bootstrap" // bootstrap interval of a quantile's difference
	TestWelch     = "Welch"     // Welch's t-test on per-second counts
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
	// Test is how the verdict was reached (Test* constants).
	Test string
	// P is the p-value (Test == TestU or TestWelch).
	P float64
	// Lo and Hi bound Head − Base at 1 − Alpha (Test == TestBootstrap).
	Lo, Hi float64
	// Verdict is ~, worse, better, or a note.
	Verdict string
	// Regression is true for a change for the worse that counts.
	Regression bool
}

// Result is a comparison.
type Result struct {
	// Rows are the compared metrics.
	Rows []Row
	// Regressions and Improvements count verdicts.
	Regressions, Improvements int
	// Disturbed names the runs other work disturbed (see
	// Options.MaxForeignCPU); their statistical differences are not judged.
	Disturbed []string
	// Failed names the runs that failed (not passed, errors, a deadline
	// hit) with the reasons. A failed head is a regression; against a
	// failed base statistical differences are not judged.
	Failed []string
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
	baseFailures, headFailures := Failures(base), Failures(head)
	for _, f := range []struct {
		r    *report.Report
		why  []string
		side string
	}{{base, baseFailures, "base"}, {head, headFailures, "head"}} {
		if len(f.why) > 0 {
			res.Failed = append(res.Failed, fmt.Sprintf("%s %s: %s", f.side, f.r.BaseName(), joinReasons(f.why)))
		}
	}
	judge := len(res.Disturbed) == 0 && len(baseFailures) == 0
	for _, row := range rows(base, head, baseFailures, headFailures, o) {
		res.add(row, judge)
	}
	return res
}

// rows builds every row: correctness first, then each pass's statistics,
// then the values shown unjudged.
func rows(base, head *report.Report, baseFailures, headFailures []string, o Options) []Row {
	out := []Row{runRow(baseFailures, headFailures)}
	out = append(out, correctnessRows(base, head)...)
	passes := []struct {
		prefix     string
		base, head *report.Pass
	}{{"", base.Main, head.Main}, {"baseline.", base.Baseline, head.Baseline}, {"handwritten.", base.Handwritten, head.Handwritten}, {"floor.", base.Floor, head.Floor}}
	for _, p := range passes {
		if p.base == nil || p.head == nil {
			continue
		}
		out = append(out, latencyRows(p.prefix, p.base, p.head, o)...)
		out = append(out, throughputRows(p.prefix, p.base, p.head, o)...)
	}
	return append(out, shownRows(base, head)...)
}

// add appends a row, downgrading statistical verdicts when the comparison
// cannot judge them; exact (correctness) verdicts always count.
func (res *Result) add(row Row, judge bool) {
	if !judge && row.Test != TestExact && (row.Verdict == VerdictWorse || row.Verdict == VerdictBetter) {
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

// shownRows are the values compare shows without judging: counters whose
// "worse" depends on the scenario, the machine's cost, and its speed before
// each pass (calibration: two runs at different speeds do not compare).
func shownRows(base, head *report.Report) []Row {
	bv, hv := base.Values(), head.Values()
	var out []Row
	for _, name := range []string{"cacheHitRate", "registryRequests", "registryRequestsPerMinimum", "inspectionErrors",
		"schedulerSLI.p50", "schedulerSLI.p99", "ratio.throughput", "calibration", "baseline.calibration", "cpuTime", "peakRSS", "peakRSSAll", "wallTime"} {
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
		out = append(out, untested(name, info.Unit, b, h))
	}
	return out
}

func untested(name string, u scenario.Unit, base, head float64) Row {
	row := Row{Metric: name, Unit: u, Base: base, Head: head, Change: rel(base, head), P: math.NaN(), Verdict: VerdictUntested}
	if math.IsNaN(base) || math.IsNaN(head) {
		row.Verdict = VerdictUnavailable
	}
	return row
}

// verdict combines significance and effect size.
func verdict(higherBetter, significant bool, change float64, o Options) (string, bool) {
	if math.IsNaN(change) || !significant || math.Abs(change) < o.Threshold {
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
