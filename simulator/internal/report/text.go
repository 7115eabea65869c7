package report

import (
	"fmt"
	"io"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// WriteText writes the short terminal summary of a run.
func (r *Report) WriteText(w io.Writer) {
	for _, p := range r.Passes() {
		writePassText(w, p)
	}
	if a := r.attacker(); a != nil {
		fmt.Fprintf(w, "attacker %d pods: %d bound, %d gated at end; longest gate hold %s (maxGateAge %s), %d held it longer\n",
			a.Pods, a.BoundPods, a.GatedAtEnd, textDuration(a.GateHoldMaxSeconds), textDuration(a.MaxGateAgeSeconds), a.OverMaxGateAge)
	}
	r.writeRatiosText(w)
	r.writeInspectionText(w)
	for _, ev := range r.Timeline {
		what := ev.Effect
		if ev.Error != "" {
			what = "error: " + ev.Error
		}
		fmt.Fprintf(w, "timeline %s at %.1fs: %s\n", ev.Action, ev.AtSeconds, what)
	}
	r.writeCostText(w)
	r.writeResourcesText(w)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	for _, o := range r.Expectations {
		writeExpectationText(w, o)
	}
	r.writeVerdictText(w)
}

// textDuration formats seconds as the text summary shows durations.
func textDuration(x float64) string { return scenario.FormatValue(scenario.UnitDuration, x) }

// writePassText writes a pass's counts and its latency families.
func writePassText(w io.Writer, p *Pass) {
	if p == nil {
		return
	}
	deadline := ""
	if p.DeadlineHit {
		deadline = " (deadline hit)"
	}
	fmt.Fprintf(w, "%-8s %d/%d pods bound in %.1fs%s: %.1f pods/s; misplaced %d, gated at end %d, unbound %d\n",
		p.Name, p.BoundPods, p.Pods, p.DurationSeconds, deadline, p.Throughput, p.MisplacedPods, p.GatedAtEnd, p.UnboundAtEnd)
	for _, fam := range []string{"gateHold", "schedule", "total", "execFormatDetection"} {
		if s, ok := p.Latency[fam]; ok && s.N > 0 {
			fmt.Fprintf(w, "         %-9s p50 %-9s p90 %-9s p99 %-9s max %s\n", fam,
				textDuration(s.P50), textDuration(s.P90), textDuration(s.P99), textDuration(s.Max))
		}
	}
}

// writeRatiosText writes the main pass against the scheduler alone, the handwritten pass and the floor.
func (r *Report) writeRatiosText(w io.Writer) {
	for _, rs := range []struct {
		to     string
		ratios map[string]float64
	}{{"baseline", r.Ratios}, {"handwritten affinity", r.HandwrittenRatios}, {"floor", r.FloorRatios}} {
		if len(rs.ratios) == 0 {
			continue
		}
		fmt.Fprintf(w, "ratio to %s: throughput ×%.2f, schedule p99 ×%.2f, total p99 ×%.2f, CPU per pod ×%.2f",
			rs.to, rs.ratios["throughput"], rs.ratios["schedule.p99"], rs.ratios["total.p99"], rs.ratios["cost.cpuPer1kPods"])
		if rel, ok := rs.ratios["cost.relativeCPU"]; ok {
			fmt.Fprintf(w, " (speed-corrected ×%.2f)", rel)
		}
		fmt.Fprintln(w)
	}
}

// writeInspectionText writes the inspection cache, the registry's requests and the oracle.
func (r *Report) writeInspectionText(w io.Writer) {
	if o := r.Operator; o != nil {
		fmt.Fprintf(w, "cache hit rate %s (%.0f hits, %.0f misses)", scenario.FormatValue(scenario.UnitRatio, o.CacheHitRate), o.CacheHits, o.CacheMisses)
		if g := r.Registry; g != nil {
			fmt.Fprintf(w, "; registry %d requests for %d images: minimum %d, content ×%.2f of it, protocol overhead %d", g.Total, g.UniqueImages, g.MinimumRequests, g.PerMinimum, g.ProtocolOverhead.Total)
		}
		fmt.Fprintln(w)
	}
	if o := r.Oracle; o != nil {
		fmt.Fprintf(w, "oracle: the baseline misplaced %d pods; the workload should produce about %.0f without the operator (%d pods at risk)\n",
			o.BaselineMisplaced, o.ExpectedMisplaced, o.AtRiskPods)
	}
}

// writeResourcesText writes each process's CPU and memory, and the run's totals.
func (r *Report) writeResourcesText(w io.Writer) {
	var all int64
	for _, p := range r.Resources.Processes {
		all += p.PeakRSSBytes
		fmt.Fprintf(w, "%-15s cpu %6.1fs  peak RSS %s\n", p.Name, p.CPUSeconds, FormatBytes(float64(p.PeakRSSBytes)))
	}
	fmt.Fprintf(w, "wall time %.1fs, peak RSS all %s; other work used %.0f%% of the machine's CPU\n",
		r.WallSeconds, FormatBytes(float64(all)), r.Environment.ForeignCPUShare*100)
}

// writeExpectationText writes one expectation's mark, value and goal.
func writeExpectationText(w io.Writer, o Outcome) {
	mark := "PASS"
	switch {
	case o.NotJudged != "":
		mark = "NOTJ"
	case !o.Passed:
		mark = "FAIL"
	}
	val := scenario.FormatValue(scenario.Unit(o.Unit), o.Value)
	if !o.Measured {
		val = "not measured"
	}
	goal := ""
	if o.Goal != "" && o.Measured {
		status := "NOT MET"
		if o.GoalMet {
			status = "met"
		}
		goal = fmt.Sprintf("  (goal %s %s)", o.Goal, status)
	}
	fmt.Fprintf(w, "%s  %-40s measured %s%s\n", mark, o.Check, val, goal)
}

// writeVerdictText writes the verdict and, on failure, each failure.
func (r *Report) writeVerdictText(w io.Writer) {
	if r.Passed {
		fmt.Fprintf(w, "PASSED %s\n", r.Scenario.Name)
		return
	}
	if r.NotJudged {
		fmt.Fprintf(w, "FAILED %s, not judged: the machine was saturated or unsteady (nothing else failed):\n", r.Scenario.Name)
	} else {
		fmt.Fprintf(w, "FAILED %s:\n", r.Scenario.Name)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}
