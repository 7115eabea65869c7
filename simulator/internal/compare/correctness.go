package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// correctnessMetrics are judged exactly: each unit is a pod a user sees
// misplaced, stuck gated or never bound, or a transition the recorder lost
// (which makes every other figure of the run doubtful).
var correctnessMetrics = []string{"misplacedPods", "gatedAtEnd", "unboundAtEnd", "recorderDrops", "baseline.recorderDrops", "handwritten.recorderDrops"}

// Failures lists why a run cannot stand as valid: expectations that did
// not hold, errors of the run itself, a pass that hit its deadline (its
// samples lack the pods that never bound). Empty for a valid run.
func Failures(r *report.Report) []string {
	var why []string
	for _, p := range r.Passes() {
		if p.DeadlineHit {
			why = append(why, fmt.Sprintf("the %s pass hit its deadline", p.Name))
		}
	}
	for _, e := range r.Errors {
		why = append(why, "error: "+e)
	}
	if !r.Passed {
		var failed []string
		for _, o := range r.Expectations {
			if !o.Passed {
				failed = append(failed, o.Check)
			}
		}
		switch {
		case len(failed) > 0:
			why = append(why, "expectations failed: "+strings.Join(failed, ", "))
		case len(why) == 0:
			why = append(why, "the run did not pass")
		}
	}
	return why
}

func joinReasons(why []string) string { return strings.Join(why, "; ") }

// runRow is the run's own verdict: a failed head after a valid base is a
// regression.
func runRow(baseFailures, headFailures []string) Row {
	failed := func(why []string) float64 {
		if len(why) > 0 {
			return 1
		}
		return 0
	}
	return exactRow("failedRun", scenario.UnitCount, failed(baseFailures), failed(headFailures))
}

func correctnessRows(base, head *report.Report) []Row {
	bv, hv := base.Values(), head.Values()
	var out []Row
	for _, name := range correctnessMetrics {
		b, okb := bv[name]
		h, okh := hv[name]
		switch {
		case !okb && !okh:
			continue
		case !okb:
			b = math.NaN()
		case !okh:
			h = math.NaN()
		}
		out = append(out, exactRow(name, scenario.UnitCount, b, h))
	}
	return out
}

// exactRow judges a count where lower is better and every unit matters.
func exactRow(name string, u scenario.Unit, base, head float64) Row {
	row := Row{Metric: name, Unit: u, Base: base, Head: head, Change: rel(base, head), P: math.NaN(), Test: TestExact, Verdict: VerdictSame}
	switch {
	case math.IsNaN(base) || math.IsNaN(head):
		row.Verdict, row.Test = VerdictUnavailable, TestNone
	case head > base:
		row.Verdict, row.Regression = VerdictWorse, true
	case head < base:
		row.Verdict = VerdictBetter
	}
	return row
}
