// Package repeat summarises repeated runs of one scenario: for each figure
// its median across the runs and its spread (max/min − 1), the measure of
// how far one run can be trusted. One run is an anecdote; a figure whose
// spread exceeds the change a user wants to see cannot show that change.
package repeat

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// Headline are the figures every summary shows when the runs measured
// them, besides those the scenario's expectations name.
var Headline = []string{
	"throughput", "utilization", "gateHold.p50", "gateHold.p99", "create.p50", "create.p99",
	"schedule.p50", "schedule.p99", "total.p50", "total.p99", "cost.cpuPer1kPods", "cost.relativeCPU",
	"cost.cpuPer1kPods.kube-apiserver", "cost.cpuPer1kPods.scheduler", "cost.cpuPer1kPods.webhook", "cost.cpuPer1kPods.controller",
	"handwritten.utilization", "handwritten.create.p99", "handwritten.schedule.p99", "handwritten.total.p99", "handwritten.cost.cpuPer1kPods",
	"handwritten.cost.relativeCPU", "baseline.utilization", "baseline.create.p99", "baseline.schedule.p99", "baseline.cost.cpuPer1kPods",
	"baseline.cost.relativeCPU", "calibration",
}

// Figure is one metric across the runs.
type Figure struct {
	// Name and Unit of the metric (scenario.Metrics).
	Name string
	Unit scenario.Unit
	// Values holds one value per run, in run order.
	Values []float64
	// Median, Min and Max of Values.
	Median, Min, Max float64
	// Spread is Max/Min − 1: how much the largest run exceeded the smallest.
	// NaN when Min is not positive.
	Spread float64
	// JudgedSpread is the spread of the runs the machine could judge
	// (report.Report.NotJudged false): a run on a saturated or unsteady
	// machine measures the host, so its figures can widen Spread with
	// nothing of the product in it. NaN with fewer than two such runs.
	JudgedSpread float64
}

// Summary is the figures of repeated runs and each run's verdict.
type Summary struct {
	// Scenario is the scenario's name.
	Scenario string
	// Runs is the number of reports summarised; Passed of them passed,
	// NotJudged of them failed only because the machine was saturated or
	// unsteady (report.Report.NotJudged).
	Runs, Passed, NotJudged int
	// Failures lists each failed run's reasons, by run (1-based).
	Failures map[int][]string
	// notJudged marks the runs (1-based) that failed only because the
	// machine was outside the scenario's headroom.
	notJudged map[int]bool
	// Figures in the order of Headline, then the expectations' metrics.
	Figures []Figure
	// Rejudged, when set, says that the verdicts are this simulator's, not
	// the ones the runs recorded, and what those were.
	Rejudged string
}

// Summarize computes the figures of reports, which must be runs of one
// scenario. A metric is summarised when every run measured it.
func Summarize(reports []*report.Report) (Summary, error) {
	if len(reports) == 0 {
		return Summary{}, fmt.Errorf("no reports to summarise")
	}
	s := Summary{Scenario: reports[0].Scenario.Name, Runs: len(reports), Failures: map[int][]string{}, notJudged: map[int]bool{}}
	values := make([]map[string]float64, len(reports))
	for i, r := range reports {
		if r.Scenario.Name != s.Scenario {
			return Summary{}, fmt.Errorf("report %d is of scenario %s, not %s", i+1, r.Scenario.Name, s.Scenario)
		}
		values[i] = r.Values()
		switch {
		case r.Passed:
			s.Passed++
		case r.NotJudged:
			s.NotJudged++
			s.notJudged[i+1] = true
			s.Failures[i+1] = r.Failures
		default:
			s.Failures[i+1] = r.Failures
		}
	}
	names := slices.Clone(Headline)
	for _, o := range reports[0].Expectations {
		if !slices.Contains(names, o.Metric) {
			names = append(names, o.Metric)
		}
	}
	for _, name := range names {
		info, ok := scenario.Metric(name)
		if !ok {
			continue
		}
		f := Figure{Name: name, Unit: info.Unit}
		for _, v := range values {
			x, ok := v[name]
			if !ok {
				break
			}
			f.Values = append(f.Values, x)
		}
		if len(f.Values) != len(reports) {
			continue
		}
		f.Median, f.Min, f.Max = stats.Median(f.Values), slices.Min(f.Values), slices.Max(f.Values)
		f.Spread = spread(f.Values)
		var judged []float64
		for i, x := range f.Values {
			if !reports[i].NotJudged {
				judged = append(judged, x)
			}
		}
		f.JudgedSpread = spread(judged)
		s.Figures = append(s.Figures, f)
	}
	return s, nil
}

// spread is max/min − 1 of values; NaN for fewer than two values or a
// minimum that is not positive.
func spread(values []float64) float64 {
	if len(values) < 2 || slices.Min(values) <= 0 {
		return math.NaN()
	}
	return slices.Max(values)/slices.Min(values) - 1
}

// formatSpread writes a spread as a percentage, "—" when there is none.
func formatSpread(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// Figure returns the named figure.
func (s Summary) Figure(name string) (Figure, bool) {
	i := slices.IndexFunc(s.Figures, func(f Figure) bool { return f.Name == name })
	if i < 0 {
		return Figure{}, false
	}
	return s.Figures[i], true
}

// WriteMarkdown writes the summary as a Markdown table, with each run's
// value so that an outlier shows.
func (s Summary) WriteMarkdown(w io.Writer, paths []string) {
	fmt.Fprintf(w, "# %s — %d runs\n\n", s.Scenario, s.Runs)
	fmt.Fprintf(w, "%d passed, %d not judged (the machine was saturated or unsteady, nothing else failed), %d failed.\n\n",
		s.Passed, s.NotJudged, s.Runs-s.Passed-s.NotJudged)
	if s.Rejudged != "" {
		fmt.Fprintf(w, "Verdicts judged again with this simulator's rules; %s.\n\n", s.Rejudged)
	}
	for i := 1; i <= s.Runs; i++ {
		if why, ok := s.Failures[i]; ok {
			verdict := "failed"
			if s.notJudged[i] {
				verdict = "not judged"
			}
			fmt.Fprintf(w, "- run %d %s: %s\n", i, verdict, strings.Join(why, "; "))
		}
	}
	fmt.Fprintln(w)
	// Not-judged runs measured the host: show the spread without them too.
	judgedColumn := s.NotJudged > 0
	header := "| figure | median | min | max | spread (max/min − 1) |"
	sep := "|---|---|---|---|---|"
	if judgedColumn {
		header += " spread, judged runs |"
		sep += "---|"
	}
	for i := range s.Runs {
		header += fmt.Sprintf(" run %d |", i+1)
		sep += "---|"
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, sep)
	for _, f := range s.Figures {
		v := func(x float64) string { return scenario.FormatValue(f.Unit, x) }
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |", f.Name, v(f.Median), v(f.Min), v(f.Max), formatSpread(f.Spread))
		if judgedColumn {
			fmt.Fprintf(w, " %s |", formatSpread(f.JudgedSpread))
		}
		for _, x := range f.Values {
			fmt.Fprintf(w, " %s |", v(x))
		}
		fmt.Fprintln(w)
	}
	if len(paths) > 0 {
		fmt.Fprintln(w, "\nReports:")
		fmt.Fprintln(w)
		for i, p := range paths {
			fmt.Fprintf(w, "%d. %s\n", i+1, p)
		}
	}
}
