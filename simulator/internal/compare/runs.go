package compare

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/archgate/archgate/simulator/internal/repeat"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// Defaults of RunsOptions.
const (
	// DefaultRunsAlpha is benchstat's significance level for the U test
	// across runs. With 5 runs a side the smallest p-value the test can
	// give is 0.008, so 0.05 is reachable; 0.01 would need 6 runs a side.
	DefaultRunsAlpha = 0.05
	// DefaultCalibrationTolerance is how far the two sides' machine speeds
	// (median calibration) may differ: runs interleaved on one machine read
	// within a few percent of each other, a different machine does not.
	DefaultCalibrationTolerance = 0.10
)

// RunsOptions tune CompareRuns.
type RunsOptions struct {
	// Alpha is the significance level of the Mann–Whitney U test.
	Alpha float64
	// CalibrationTolerance bounds |head/base − 1| of the median calibration.
	CalibrationTolerance float64
}

func (o RunsOptions) withDefaults() RunsOptions {
	if o.Alpha == 0 {
		o.Alpha = DefaultRunsAlpha
	}
	if o.CalibrationTolerance == 0 {
		o.CalibrationTolerance = DefaultCalibrationTolerance
	}
	return o
}

// Effect is one figure compared across runs: each side's values, the
// test's p-value, the change as a ratio head/base with its confidence
// interval, and the smallest change the base runs' spread lets the test see.
type Effect struct {
	Name   string
	Unit   scenario.Unit
	Higher bool
	// Base and Head are each side's values, one per run.
	Base, Head []float64
	// BaseMedian and HeadMedian are the sides' medians.
	BaseMedian, HeadMedian float64
	// P is the Mann–Whitney U test's p-value (benchmath.AssumeNothing).
	P float64
	// Ratio is the Hodges–Lehmann estimate of head/base (the median of
	// every head/base pair); Lo and Hi bound it at 1 − Alpha, from
	// inverting the same U test (the Moses interval). NaN without positive
	// values on both sides.
	Ratio, Lo, Hi float64
	// MinDetectable is the smallest relative change of the base runs that
	// the test would call significant with this many runs (NaN when none
	// can be).
	MinDetectable float64
	// Verdict is "no change", "regression", "improvement" or
	// "inconclusive" (the test cannot reach Alpha with this many runs).
	Verdict string
	// Warnings are benchmath's.
	Warnings []string
}

// RunsResult is the comparison of two sets of runs.
type RunsResult struct {
	// Scenario is the scenario compared; Runs the runs per side.
	Scenario           string
	BaseRuns, HeadRuns int
	// BaseFailed and HeadFailed count each side's runs that failed.
	BaseFailed, HeadFailed int
	Alpha                  float64
	Effects                []Effect
	// Regressions counts effects with that verdict.
	Regressions int
}

// Fingerprint is what must be equal for runs to compare: the machine and
// the control plane.
type Fingerprint struct {
	Cores             int
	CPULimit          float64
	CPUModel          string
	KubernetesVersion string
}

func fingerprint(r *report.Report) Fingerprint {
	return Fingerprint{Cores: r.Environment.Cores, CPULimit: r.Environment.CPULimit, CPUModel: r.Environment.CPUModel, KubernetesVersion: r.Environment.KubernetesVersion}
}

// CheckFingerprints refuses runs from different machines or control planes,
// and sides whose machine speed differed beyond the tolerance.
func CheckFingerprints(base, head []*report.Report, o RunsOptions) error {
	o = o.withDefaults()
	all := slices.Concat(base, head)
	if len(base) == 0 || len(head) == 0 {
		return errors.New("each side needs at least one run")
	}
	want := fingerprint(all[0])
	for _, r := range all[1:] {
		if got := fingerprint(r); got != want {
			return fmt.Errorf("runs from different machines or control planes: %+v and %+v", want, got)
		}
	}
	cal := func(rs []*report.Report) float64 {
		var xs []float64
		for _, r := range rs {
			if r.Main != nil && r.Main.CalibrationSeconds > 0 {
				xs = append(xs, r.Main.CalibrationSeconds)
			}
		}
		if len(xs) == 0 {
			return math.NaN()
		}
		return stats.Median(xs)
	}
	b, h := cal(base), cal(head)
	if d := h/b - 1; math.Abs(d) > o.CalibrationTolerance {
		return fmt.Errorf("the machine ran at different speeds: median calibration %.2fµs (base) and %.2fµs (head), %+.0f%%, beyond ±%.0f%%",
			b*1e6, h*1e6, 100*d, 100*o.CalibrationTolerance)
	}
	return nil
}

// CompareRuns compares every figure both sides measured in all their runs
// (repeat.Summarize's figures), with the U test benchstat uses.
func CompareRuns(base, head []*report.Report, o RunsOptions) (RunsResult, error) {
	o = o.withDefaults()
	if err := CheckFingerprints(base, head, o); err != nil {
		return RunsResult{}, err
	}
	bs, err := repeat.Summarize(base)
	if err != nil {
		return RunsResult{}, fmt.Errorf("base: %w", err)
	}
	hs, err := repeat.Summarize(head)
	if err != nil {
		return RunsResult{}, fmt.Errorf("head: %w", err)
	}
	if bs.Scenario != hs.Scenario {
		return RunsResult{}, fmt.Errorf("runs of different scenarios: %s and %s", bs.Scenario, hs.Scenario)
	}
	res := RunsResult{Scenario: bs.Scenario, BaseRuns: bs.Runs, HeadRuns: hs.Runs, Alpha: o.Alpha,
		BaseFailed: bs.Runs - bs.Passed, HeadFailed: hs.Runs - hs.Passed}
	for _, bf := range bs.Figures {
		if bf.Name == "calibration" {
			continue // the fingerprint, not a figure of the code
		}
		hf, ok := hs.Figure(bf.Name)
		if !ok {
			continue
		}
		info, _ := scenario.Metric(bf.Name)
		e := effect(bf.Values, hf.Values, o.Alpha)
		e.Name, e.Unit, e.Higher = bf.Name, bf.Unit, info.Higher
		e.BaseMedian, e.HeadMedian = bf.Median, hf.Median
		if bf.Min == bf.Max && hf.Min == hf.Max && bf.Min == hf.Min {
			e.Warnings = nil // every run measured the same value (0 misplaced pods): no change
		}
		e.Verdict = runsVerdict(e, o.Alpha)
		if e.Verdict == "regression" {
			res.Regressions++
		}
		res.Effects = append(res.Effects, e)
	}
	return res, nil
}

// effect tests a against b and estimates b/a with its interval.
func effect(a, b []float64, alpha float64) Effect {
	th := &benchmath.Thresholds{CompareAlpha: alpha}
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(a), th), benchmath.NewSample(slices.Clone(b), th))
	e := Effect{Base: a, Head: b, P: cmp.P, Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), MinDetectable: math.NaN()}
	for _, w := range cmp.Warnings {
		e.Warnings = append(e.Warnings, w.Error())
	}
	if slices.Min(a) <= 0 || slices.Min(b) <= 0 {
		return e
	}
	ratios := pairRatios(a, b)
	e.Ratio = stats.Median(ratios)
	e.Lo, e.Hi = mosesInterval(a, b, ratios, alpha)
	e.MinDetectable = minDetectable(a, alpha)
	return e
}

// pairRatios are y/x for every pair, sorted.
func pairRatios(xs, ys []float64) []float64 {
	var out []float64
	for _, x := range xs {
		for _, y := range ys {
			out = append(out, y/x)
		}
	}
	slices.Sort(out)
	return out
}

// uP is the two-sided U test's p-value of a scaled by c against b.
func uP(a []float64, c float64, b []float64, alpha float64) float64 {
	scaled := make([]float64, len(a))
	for i, x := range a {
		scaled[i] = x * c
	}
	th := &benchmath.Thresholds{CompareAlpha: alpha}
	return benchmath.AssumeNothing.Compare(benchmath.NewSample(scaled, th), benchmath.NewSample(slices.Clone(b), th)).P
}

// mosesInterval is the set of scale factors c for which the U test does
// not reject "a×c and b come from one distribution" at alpha: the
// confidence interval of the ratio b/a that the test itself implies. The
// test's statistic only changes where a×c crosses a value of b, i.e. at the
// pairwise ratios, so testing between consecutive ratios finds its ends.
func mosesInterval(a, b, ratios []float64, alpha float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for i := 0; i+1 < len(ratios); i++ {
		if ratios[i] == ratios[i+1] {
			continue
		}
		mid := math.Sqrt(ratios[i] * ratios[i+1])
		if uP(a, mid, b, alpha) > alpha {
			if math.IsNaN(lo) {
				lo = ratios[i]
			}
			hi = ratios[i+1]
		}
	}
	return lo, hi
}

// minDetectable is the smallest relative increase c − 1 such that the
// base runs against themselves scaled by c test significant at alpha: with
// this many runs and this spread, smaller changes cannot be told from noise.
func minDetectable(a []float64, alpha float64) float64 {
	ratios := pairRatios(a, a)
	for i := 0; i+1 < len(ratios); i++ {
		if ratios[i] < 1 || ratios[i] == ratios[i+1] {
			continue
		}
		if uP(a, math.Sqrt(ratios[i]*ratios[i+1]), a, alpha) < alpha {
			return ratios[i] - 1
		}
	}
	if uP(a, ratios[len(ratios)-1]*1.001, a, alpha) < alpha {
		return ratios[len(ratios)-1] - 1
	}
	return math.NaN()
}

// runsVerdict names an effect: no change unless the test rejects at alpha;
// then a regression or an improvement by the metric's better direction.
func runsVerdict(e Effect, alpha float64) string {
	if e.P > alpha {
		if len(e.Warnings) > 0 {
			return "inconclusive"
		}
		return "no change"
	}
	worse := e.HeadMedian > e.BaseMedian
	if e.Higher {
		worse = !worse
	}
	if worse {
		return "regression"
	}
	return "improvement"
}

// PrintRuns writes the comparison as a table: each figure's medians, the
// change with its interval, the p-value, the smallest detectable change
// and the verdict.
func PrintRuns(w io.Writer, res RunsResult) {
	fmt.Fprintf(w, "%s: %d base runs (%d failed) vs %d head runs (%d failed), interleaved; Mann–Whitney U (benchmath), alpha %.2f\n\n",
		res.Scenario, res.BaseRuns, res.BaseFailed, res.HeadRuns, res.HeadFailed, res.Alpha)
	fmt.Fprintf(w, "| figure | base median | head median | change [%.0f%% interval] | p | smallest detectable | verdict |\n", 100*(1-res.Alpha))
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, e := range res.Effects {
		v := func(x float64) string { return scenario.FormatValue(e.Unit, x) }
		change, mde := "—", "—"
		if !math.IsNaN(e.Ratio) {
			change = fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*(e.Ratio-1), 100*(e.Lo-1), 100*(e.Hi-1))
		}
		if !math.IsNaN(e.MinDetectable) {
			mde = fmt.Sprintf("%.1f%%", 100*e.MinDetectable)
		}
		verdict := e.Verdict
		if len(e.Warnings) > 0 {
			verdict += " (" + strings.Join(e.Warnings, "; ") + ")"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %.3f | %s | %s |\n", e.Name, v(e.BaseMedian), v(e.HeadMedian), change, e.P, mde, verdict)
	}
	fmt.Fprintf(w, "\n%d regression(s).\n", res.Regressions)
}
