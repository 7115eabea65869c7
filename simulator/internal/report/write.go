package report

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Files are the paths a report was written to.
type Files struct {
	// JSON is the report's summary, Raw its series (raw.go); Markdown the
	// human summary; LatencySVG and TimelineSVG its plots.
	JSON, Raw, Markdown, LatencySVG, TimelineSVG string
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

// Write writes the report's summary, raw series, Markdown summary and plots
// to <dir>/<scenario>/<BaseName>.{json,raw.json.gz,md} and -latency.svg,
// -timeline.svg.
func (r *Report) Write(dir string) (Files, error) {
	sub := filepath.Join(dir, r.Scenario.Name)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return Files{}, err
	}
	base := filepath.Join(sub, r.BaseName())
	f := Files{JSON: base + ".json", Markdown: base + ".md", LatencySVG: base + "-latency.svg", TimelineSVG: base + "-timeline.svg"}
	f.Raw = RawPath(f.JSON)
	if err := r.WriteJSON(f.JSON); err != nil {
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
	if err := writeFile(f.Markdown, func(w io.Writer) error { return r.WriteMarkdown(w, f) }); err != nil {
		return f, fmt.Errorf("writing %s: %w", f.Markdown, err)
	}
	if len(plotErrs) > 0 {
		return f, fmt.Errorf("%s", strings.Join(plotErrs, "; "))
	}
	return f, nil
}

// WriteJSON writes r's summary to path and its raw series beside it
// (RawPath), in the current schema version whatever r was loaded from. The
// raw file goes first and each under a temporary name: a killed run leaves no
// half-written report for compare to trip over (reports/**/*.tmp is
// git-ignored).
func (r *Report) WriteJSON(path string) error {
	summary, raw := r.split()
	summary.SchemaVersion = SchemaVersion
	data, err := json.MarshalIndent(summary, "", " ")
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	if err := writeRaw(RawPath(path), raw); err != nil {
		return fmt.Errorf("writing %s: %w", RawPath(path), err)
	}
	if err := os.WriteFile(path+".tmp", append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// writeFile creates path and writes it with write; the write's and the
// close's errors are returned (a full disk must not leave a truncated file
// that looks complete).
func writeFile(path string, write func(io.Writer) error) (err error) {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	return write(out)
}

//go:embed templates/summary.md.tmpl
var summaryTemplateText string

// summaryTemplate renders the Markdown summary (templates/summary.md.tmpl).
var summaryTemplate = template.Must(template.New("summary").Funcs(template.FuncMap{
	"trim":         strings.TrimSpace,
	"short":        func(s string) string { return s[:min(len(s), 12)] },
	"bytes":        func(b int64) string { return FormatBytes(float64(b)) },
	"percent":      func(x float64) float64 { return x * 100 },
	"ratio":        func(x float64) string { return scenario.FormatValue(scenario.UnitRatio, x) },
	"value":        func(u string, x float64) string { return scenario.FormatValue(scenario.Unit(u), x) },
	"join":         strings.Join,
	"floatCounts":  formatFloatCounts,
	"uintCounts":   formatUintCounts,
	"intCounts":    formatCounts,
	"graceSeconds": func() float64 { return GateAgeGraceSeconds },
	"goalText":     Outcome.GoalText,
	"phaseMeans":   formatPhaseMeans,
}).Parse(summaryTemplateText))

// formatPhaseMeans writes the mean time of each reconcile phase, in the order they run (any
// other phase last, by name).
func formatPhaseMeans(means map[string]float64) string {
	phaseOrder := []string{"config", "credentials", "inspection", "placement", "patch"}
	names := slices.Sorted(maps.Keys(means))
	slices.SortStableFunc(names, func(a, b string) int {
		ia, ib := slices.Index(phaseOrder, a), slices.Index(phaseOrder, b)
		if ia < 0 {
			ia = len(phaseOrder)
		}
		if ib < 0 {
			ib = len(phaseOrder)
		}
		return ia - ib
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + tableDuration(means[n])
	}
	return strings.Join(parts, ", ")
}

// summaryView is what the summary template reads besides the report: the
// per-pass rows, the ratios as text, the cost section and the plots' file
// names.
type summaryView struct {
	Report                  *Report
	Held                    int
	Passes                  []*Pass
	Rows                    []summaryRow
	Ratios                  []string
	HandwrittenRatios       []string
	FloorRatios             []string
	Cost                    *costView
	LatencySVG, TimelineSVG string
}

// summaryRow is one row of the passes table, a cell per pass.
type summaryRow struct {
	Label string
	Cells []string
}

// WriteMarkdown writes the human summary of the report.
func (r *Report) WriteMarkdown(w io.Writer, f Files) error {
	v := summaryView{Report: r, Held: countPassed(r.Expectations), Passes: r.Passes(),
		Ratios: ratioTexts(r.Ratios), HandwrittenRatios: ratioTexts(r.HandwrittenRatios),
		FloorRatios: ratioTexts(r.FloorRatios)}
	v.Rows = passRows(v.Passes)
	v.Cost = r.costSummary()
	if f.LatencySVG != "" {
		v.LatencySVG = filepath.Base(f.LatencySVG)
	}
	if f.TimelineSVG != "" {
		v.TimelineSVG = filepath.Base(f.TimelineSVG)
	}
	return summaryTemplate.Execute(w, v)
}

// GoalText is the goal cell of an expectation for people: "—" when the
// check is the goal itself, else the goal and whether it was met.
func (o Outcome) GoalText() string {
	switch {
	case o.Goal == "":
		return "—"
	case !o.Measured:
		return "`" + o.Goal + "`"
	case o.GoalMet:
		return "`" + o.Goal + "` met"
	default:
		return "`" + o.Goal + "` **not met**"
	}
}

// ratioTexts are ratios as "name ×x.xx", sorted by name.
func ratioTexts(ratios map[string]float64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ratios)) {
		out = append(out, fmt.Sprintf("%s ×%.2f", k, ratios[k]))
	}
	return out
}

// passRows are the rows of the passes table: what the passes did, how fast, and on what
// machine; a row no pass measured (exec format errors without the fake kubelets' errors)
// says nothing and is left out.
func passRows(passes []*Pass) []summaryRow {
	t := passTable(passes)
	rows := slices.Concat(t.latencyRows(), t.outcomeRows(), t.machineRows())
	return slices.DeleteFunc(rows, func(r summaryRow) bool {
		return !slices.ContainsFunc(r.Cells, func(c string) bool { return c != "—" })
	})
}

// passTable builds rows of the passes table, one cell per pass.
type passTable []*Pass

// row is a row labelled label whose cells f computes per pass.
func (t passTable) row(label string, f func(p *Pass) string) summaryRow {
	out := summaryRow{Label: label}
	for _, p := range t {
		out.Cells = append(out.Cells, f(p))
	}
	return out
}

// tableDuration formats seconds as the passes table shows durations.
func tableDuration(x float64) string { return scenario.FormatValue(scenario.UnitDuration, x) }

// latencyRows: counts, throughput and every latency family, whole and split at StartWindow.
func (t passTable) latencyRows() []summaryRow {
	d := tableDuration
	rows := []summaryRow{
		t.row("pods created / bound", func(p *Pass) string {
			if p.DeadlineHit {
				return fmt.Sprintf("%d / %d (deadline hit)", p.Pods, p.BoundPods)
			}
			return fmt.Sprintf("%d / %d", p.Pods, p.BoundPods)
		}),
		t.row("throughput", func(p *Pass) string { return fmt.Sprintf("%.1f pods/s over %.1fs", p.Throughput, p.DurationSeconds) }),
	}
	for _, fam := range []string{"gateHold", "schedule", "total", "create", "execFormatDetection"} {
		rows = append(rows, t.row(fam+" p50 / p90 / p99 / max", func(p *Pass) string {
			s, ok := p.Latency[fam]
			if !ok || s.N == 0 {
				return "—"
			}
			return fmt.Sprintf("%s / %s / %s / %s", d(s.P50), d(s.P90), d(s.P99), d(s.Max))
		}))
	}
	for _, fam := range []string{"gateHold", "create", "schedule", "total"} {
		rows = append(rows, t.row(fmt.Sprintf("%s p50 / p99: first %s, then the rest", fam, StartWindow), func(p *Pass) string {
			a, aok := p.StartLatency[fam]
			b, bok := p.RestLatency[fam]
			if !aok || !bok || a.N == 0 || b.N == 0 {
				return "—"
			}
			return fmt.Sprintf("%s / %s, then %s / %s", d(a.P50), d(a.P99), d(b.P50), d(b.P99))
		}))
	}
	for _, fam := range scenario.WindowFamilies {
		rows = append(rows, t.row(fmt.Sprintf("%s p99: a typical %s (median of the later windows) / first %s ÷ it", fam, StartWindow, StartWindow), func(p *Pass) string {
			typical, ok := p.TypicalWindowP99(fam)
			penalty, pok := p.StartPenalty(fam)
			if !ok || !pok {
				return "—"
			}
			return fmt.Sprintf("%s / ×%.2f", d(typical), penalty)
		}))
	}
	return append(rows,
		t.row("scheduler SLI p50 / p99 (cross-check)", func(p *Pass) string {
			if p.SchedulerSLI == nil {
				return "—"
			}
			return fmt.Sprintf("%s / %s (n=%.0f)", d(p.SchedulerSLI.P50), d(p.SchedulerSLI.P99), p.SchedulerSLI.Count)
		}),
		t.row("apiserver mutating admission per pod: time / webhook calls / policy checks / chain run again", func(p *Pass) string {
			if p.Admission == nil {
				return "—"
			}
			a := p.Admission
			return fmt.Sprintf("%s / %.2f (%s) / %.2f / %.2f", d(a.MutatingSecondsPerPod), a.WebhookCallsPerPod, d(a.WebhookSecondsPerPod), a.PolicyChecksPerPod, a.ReinvokedPerPod)
		}),
		t.row("apiserver heap: live at the start / allocated per pod / collections / collector CPU per 1,000 pods", func(p *Pass) string {
			g := p.APIServerRuntime
			if g == nil {
				return "—"
			}
			return fmt.Sprintf("%s / %s / %.0f / %s", FormatBytes(g.LiveHeapBytesAtStart), FormatBytes(g.AllocatedBytesPerPod), g.GCCycles, d(g.GCCPUSecondsPer1kPods))
		}),
	)
}

// outcomeRows: where the pods ended and how archgate placed them.
func (t passTable) outcomeRows() []summaryRow {
	return []summaryRow{
		t.row("misplaced pods", func(p *Pass) string { return fmt.Sprint(p.MisplacedPods) }),
		t.row("gated / unbound at end", func(p *Pass) string { return fmt.Sprintf("%d / %d", p.GatedAtEnd, p.UnboundAtEnd) }),
		t.row("Pending by design", func(p *Pass) string {
			if p.PendingByDesign == 0 {
				return "0"
			}
			return fmt.Sprintf("%d (%s)", p.PendingByDesign, p.PendingReason)
		}),
		t.row("placements", func(p *Pass) string { return formatCounts(p.Placements) }),
		t.row("never gated / placed at admission", func(p *Pass) string {
			if !p.Operator {
				return "—"
			}
			return fmt.Sprintf("%d / %d", p.NeverGatedPods, p.PlacedAtAdmissionPods)
		}),
		t.row("exec format errors: reported / detected / missed / false", func(p *Pass) string {
			x := p.ExecFormat
			if x == nil {
				return "—"
			}
			return fmt.Sprintf("%d / %d / %d / %d", x.ReportedPods, x.DetectedPods, x.MissedPods, x.FalseDetections)
		}),
	}
}

// machineRows: what the harness and the machine did during the pass.
func (t passTable) machineRows() []summaryRow {
	return []summaryRow{
		t.row("arrival lag max", func(p *Pass) string { return tableDuration(p.ArrivalLagMaxSeconds) }),
		t.row("machine CPU busy over the pass (all cores, other work included)", func(p *Pass) string {
			if p.Cost == nil || p.Cost.Utilization == 0 {
				return "—"
			}
			return scenario.FormatValue(scenario.UnitRatio, p.Cost.Utilization)
		}),
		t.row("machine speed before the pass (calibration, lower is faster)", func(p *Pass) string {
			if p.CalibrationSeconds == 0 {
				return "—"
			}
			return fmt.Sprintf("%.2fµs", p.CalibrationSeconds*1e6) // three digits: passes differ by a few percent
		}),
		t.row("recorder events / drops", func(p *Pass) string { return fmt.Sprintf("%d / %d", p.Recorder.Events, p.Recorder.Drops) }),
	}
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
