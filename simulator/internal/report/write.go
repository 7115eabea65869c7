package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Files are the paths a report was written to.
type Files struct {
	// JSON is the report; Markdown its summary; LatencySVG and TimelineSVG
	// its plots.
	JSON, Markdown, LatencySVG, TimelineSVG string
}

// BaseName is the file name stem of a report:
// <commit>[-dirty]-<UTC time>.
func (r *Report) BaseName() string {
	commit := r.Environment.Commit
	if commit == "" {
		commit = "nocommit"
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if r.Environment.Dirty {
		commit += "-dirty"
	}
	return commit + "-" + r.StartedAt.UTC().Format("20060102T150405Z")
}

// Write writes the report, its summary and plots to
// <dir>/<scenario>/<BaseName>.{json,md} and -latency.svg, -timeline.svg.
func (r *Report) Write(dir string) (Files, error) {
	sub := filepath.Join(dir, r.Scenario.Name)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return Files{}, err
	}
	base := filepath.Join(sub, r.BaseName())
	f := Files{JSON: base + ".json", Markdown: base + ".md", LatencySVG: base + "-latency.svg", TimelineSVG: base + "-timeline.svg"}
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return Files{}, fmt.Errorf("encoding report: %w", err)
	}
	// Written under a temporary name first: a killed run leaves no
	// half-written report for compare to trip over (reports/**/*.tmp is
	// git-ignored).
	if err := os.WriteFile(f.JSON+".tmp", append(data, '\n'), 0o644); err != nil {
		return Files{}, err
	}
	if err := os.Rename(f.JSON+".tmp", f.JSON); err != nil {
		return Files{}, err
	}
	var plotErrs []string
	if err := LatencyCDFPlot(r, f.LatencySVG); err != nil {
		plotErrs = append(plotErrs, "latency plot: "+err.Error())
		f.LatencySVG = ""
	}
	if err := TimelinePlot(r, f.TimelineSVG); err != nil {
		plotErrs = append(plotErrs, "timeline plot: "+err.Error())
		f.TimelineSVG = ""
	}
	md, err := os.Create(f.Markdown)
	if err != nil {
		return f, err
	}
	defer md.Close()
	r.WriteMarkdown(md, f)
	if len(plotErrs) > 0 {
		return f, fmt.Errorf("%s", strings.Join(plotErrs, "; "))
	}
	return f, nil
}

// WriteMarkdown writes the human summary of the report.
func (r *Report) WriteMarkdown(w io.Writer, f Files) {
	fmt.Fprintf(w, "# %s — %s\n\n", r.Scenario.Name, r.BaseName())
	if r.Scenario.Description != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(r.Scenario.Description))
	}
	verdict := "**PASSED**"
	if !r.Passed {
		verdict = "**FAILED**"
	}
	fmt.Fprintf(w, "%s — %d/%d expectations held, wall time %.1fs.\n\n", verdict, countPassed(r.Expectations), len(r.Expectations), r.WallSeconds)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "- run error: %s\n", e)
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(w)
	}
	e := r.Environment
	fmt.Fprintf(w, "| environment | |\n|---|---|\n")
	fmt.Fprintf(w, "| commit | `%s`%s (tree `%.12s`) |\n", e.Commit, map[bool]string{true: " dirty", false: ""}[e.Dirty], e.Tree)
	fmt.Fprintf(w, "| Go / Kubernetes | %s / %s |\n", e.GoVersion, e.KubernetesVersion)
	fmt.Fprintf(w, "| machine | %d cores, %s, %s, %s |\n", e.Cores, e.CPUModel, FormatBytes(float64(e.MemoryBytes)), e.OS)
	fmt.Fprintf(w, "| other work on the machine | %.0f%% of its CPU (peak load average %.1f) |\n", e.ForeignCPUShare*100, e.LoadAverage)
	fmt.Fprintf(w, "| host / control plane | %s / %s |\n", e.Host, e.ControlPlane)
	fmt.Fprintf(w, "| started | %s |\n\n", r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"))

	fmt.Fprintf(w, "## Passes\n\n")
	passes := []*Pass{r.Main}
	if r.Baseline != nil {
		passes = append(passes, r.Baseline)
	}
	fmt.Fprintf(w, "| | %s |\n|---|%s\n", joinPasses(passes, func(p *Pass) string {
		return fmt.Sprintf("%s (operator %s)", p.Name, map[bool]string{true: "on", false: "off"}[p.Operator])
	}), strings.Repeat("---|", len(passes)))
	row := func(name string, f func(p *Pass) string) {
		fmt.Fprintf(w, "| %s | %s |\n", name, joinPasses(passes, f))
	}
	row("pods created / bound", func(p *Pass) string {
		if p.DeadlineHit {
			return fmt.Sprintf("%d / %d (deadline hit)", p.Pods, p.BoundPods)
		}
		return fmt.Sprintf("%d / %d", p.Pods, p.BoundPods)
	})
	row("throughput", func(p *Pass) string { return fmt.Sprintf("%.1f pods/s over %.1fs", p.Throughput, p.DurationSeconds) })
	for _, fam := range []string{"gateHold", "schedule", "total", "create"} {
		row(fam+" p50 / p90 / p99 / max", func(p *Pass) string {
			s, ok := p.Latency[fam]
			if !ok || s.N == 0 {
				return "—"
			}
			d := func(x float64) string { return scenario.FormatValue(scenario.UnitDuration, x) }
			return fmt.Sprintf("%s / %s / %s / %s", d(s.P50), d(s.P90), d(s.P99), d(s.Max))
		})
	}
	row("scheduler SLI p50 / p99 (cross-check)", func(p *Pass) string {
		if p.SchedulerSLI == nil {
			return "—"
		}
		d := func(x float64) string { return scenario.FormatValue(scenario.UnitDuration, x) }
		return fmt.Sprintf("%s / %s (n=%.0f)", d(p.SchedulerSLI.P50), d(p.SchedulerSLI.P99), p.SchedulerSLI.Count)
	})
	row("misplaced pods", func(p *Pass) string { return fmt.Sprint(p.MisplacedPods) })
	row("gated / unbound at end", func(p *Pass) string { return fmt.Sprintf("%d / %d", p.GatedAtEnd, p.UnboundAtEnd) })
	row("placements", func(p *Pass) string { return formatCounts(p.Placements) })
	row("never gated / placed at admission", func(p *Pass) string {
		if !p.Operator {
			return "—"
		}
		return fmt.Sprintf("%d / %d", p.NeverGatedPods, p.PlacedAtAdmissionPods)
	})
	row("arrival lag max", func(p *Pass) string {
		return scenario.FormatValue(scenario.UnitDuration, p.ArrivalLagMaxSeconds)
	})
	row("recorder events / drops", func(p *Pass) string { return fmt.Sprintf("%d / %d", p.Recorder.Events, p.Recorder.Drops) })
	fmt.Fprintln(w)
	if len(r.Ratios) > 0 {
		fmt.Fprintf(w, "Main pass relative to the scheduler alone (baseline): ")
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Ratios)) {
			parts = append(parts, fmt.Sprintf("%s ×%.2f", k, r.Ratios[k]))
		}
		fmt.Fprintf(w, "%s.\n\n", strings.Join(parts, ", "))
	}
	if o := r.Operator; o != nil {
		fmt.Fprintf(w, "## Operator\n\n")
		fmt.Fprintf(w, "- inspection cache: %.0f hits, %.0f misses (hit rate %s), %.0f de-duplicated waits\n",
			o.CacheHits, o.CacheMisses, scenario.FormatValue(scenario.UnitRatio, o.CacheHitRate), o.CacheDedupWaits)
		fmt.Fprintf(w, "- inspections: %.0f, errors: %s\n", o.Inspections, formatFloatCounts(o.InspectionErrors))
		fmt.Fprintf(w, "- webhook: %.0f gated, skipped %s\n\n", o.WebhookGated, formatFloatCounts(o.WebhookSkipped))
	}
	if g := r.Registry; g != nil {
		fmt.Fprintf(w, "## Registry\n\n")
		fmt.Fprintf(w, "- %d requests for %d unique images; minimum %d, content requests %d (×%.2f of the minimum); protocol overhead %d (%d pings, %d extra tokens; %.2f per image)\n",
			g.Total, g.UniqueImages, g.MinimumRequests, g.ContentRequests, g.PerMinimum, g.ProtocolOverhead.Total, g.ProtocolOverhead.Pings, g.ProtocolOverhead.ExtraTokens, g.ProtocolOverhead.PerImage)
		fmt.Fprintf(w, "- by kind: %s\n", formatUintCounts(g.Requests))
		fmt.Fprintf(w, "- by status: %s\n", formatUintCounts(g.Statuses))
		if len(g.Faults) > 0 {
			fmt.Fprintf(w, "- injected faults: %s\n", formatUintCounts(g.Faults))
		}
		fmt.Fprintln(w)
	}
	if len(r.Timeline) > 0 {
		fmt.Fprintf(w, "## Timeline\n\n| at | until | action | error |\n|---|---|---|---|\n")
		for _, ev := range r.Timeline {
			fmt.Fprintf(w, "| %.1fs | %.1fs | %s | %s |\n", ev.AtSeconds, ev.EndSeconds, ev.Action, ev.Error)
		}
		fmt.Fprintln(w)
	}
	r.writeCostMarkdown(w)
	r.writeStepsMarkdown(w)
	fmt.Fprintf(w, "## Resources\n\n| process | CPU | peak RSS |\n|---|---|---|\n")
	for _, p := range r.Resources.Processes {
		fmt.Fprintf(w, "| %s | %.1fs | %s |\n", p.Name, p.CPUSeconds, FormatBytes(float64(p.PeakRSSBytes)))
	}
	fmt.Fprintf(w, "\n## Expectations\n\n| | check | measured | source |\n|---|---|---|---|\n")
	for _, o := range r.Expectations {
		mark, val := "✅", scenario.FormatValue(scenario.Unit(o.Unit), o.Value)
		if !o.Passed {
			mark = "❌"
		}
		if !o.Measured {
			val = "not measured"
		}
		fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", mark, o.Check, val, o.Source)
	}
	fmt.Fprintln(w)
	if f.LatencySVG != "" {
		fmt.Fprintf(w, "![latency CDF](%s)\n\n", filepath.Base(f.LatencySVG))
	}
	if f.TimelineSVG != "" {
		fmt.Fprintf(w, "![timeline](%s)\n", filepath.Base(f.TimelineSVG))
	}
}

func joinPasses(ps []*Pass, f func(*Pass) string) string {
	var out []string
	for _, p := range ps {
		out = append(out, f(p))
	}
	return strings.Join(out, " | ")
}

func countPassed(os []Outcome) int {
	n := 0
	for _, o := range os {
		if o.Passed {
			n++
		}
	}
	return n
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, m[k]))
	}
	return strings.Join(parts, ", ")
}

func formatFloatCounts(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func formatUintCounts(m map[string]uint64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// FormatBytes renders a size in MiB or GiB.
func FormatBytes(b float64) string {
	if b <= 0 || math.IsNaN(b) {
		return "—"
	}
	return scenario.FormatValue(scenario.UnitBytes, b)
}
