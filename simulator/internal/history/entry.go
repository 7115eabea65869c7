// Package history indexes the reports committed for each scenario: a page
// per scenario (reports/<scenario>/index.md) listing every report with its
// commit, date, machine, verdict and headline figures, and a plot of those
// figures across the reports (trend.svg), with each check's guard and goal.
// It reads report summaries (report.Load) and, for older reports whose JSON
// was not committed, their Markdown summaries.
package history

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Verdict is a report's outcome.
type Verdict string

// Verdicts, as the reports print them.
const (
	Passed    Verdict = "PASSED"
	Failed    Verdict = "FAILED"
	NotJudged Verdict = "not judged"
)

// Figure is one expectation of a report: its check and what was measured.
type Figure struct {
	// Check is the parsed check; its Goal is the report's goal, if any.
	Check scenario.Check
	// Value is the measured value in the metric's base unit; Measured is
	// false when the run did not produce it.
	Value    float64
	Measured bool
	// Passed is the report's verdict on the check.
	Passed bool
}

// Entry is one report.
type Entry struct {
	// Name is the report's file stem (<commit>[-dirty]-<UTC time>).
	Name string
	// Commit is the commit the report names; Started its start time.
	Commit  string
	Started time.Time
	// Machine describes where it ran (cores, quota, CPU model).
	Machine string
	// Verdict is the run's outcome.
	Verdict Verdict
	// Figures are its expectations, in the report's order.
	Figures []Figure
}

// Figure returns the entry's figure of metric, if the report checked it.
func (e Entry) Figure(metric string) (Figure, bool) {
	for _, f := range e.Figures {
		if f.Check.Metric.Name == metric {
			return f, true
		}
	}
	return Figure{}, false
}

// reportName matches the file stem of a run's report.
var reportName = regexp.MustCompile(`^([0-9a-f]{12}|nocommit)(-dirty)?-(\d{8}T\d{6}Z)$`)

// IsReportName reports whether stem names a run's report (and not a repeat
// or compare summary, or the index itself).
func IsReportName(stem string) bool { return reportName.MatchString(stem) }

// FromReport is the entry of a loaded report.
func FromReport(name string, r *report.Report) Entry {
	e := Entry{Name: name, Commit: short(r.Environment.Commit), Started: r.StartedAt.UTC(), Machine: machine(r.Environment)}
	switch {
	case r.Passed:
		e.Verdict = Passed
	case r.NotJudged:
		e.Verdict = NotJudged
	default:
		e.Verdict = Failed
	}
	for _, o := range r.Expectations {
		c, err := o.ParsedCheck()
		if err != nil {
			continue // a metric this simulator no longer knows
		}
		e.Figures = append(e.Figures, Figure{Check: c, Value: o.Value, Measured: o.Measured, Passed: o.Passed})
	}
	return e
}

// machine is the machine column: cores, quota and CPU model.
func machine(env report.Environment) string {
	m := fmt.Sprintf("%d cores, %s", env.Cores, env.CPUModel)
	if env.CPULimit > 0 {
		m = fmt.Sprintf("%d cores (quota %.2f), %s", env.Cores, env.CPULimit, env.CPUModel)
	}
	return m
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// Markdown summary lines FromMarkdown reads (report/templates/summary.md.tmpl).
var (
	verdictLine    = regexp.MustCompile(`^\*\*(PASSED|FAILED)(, not judged)?\*\*`)
	envRow         = regexp.MustCompile("^\\| (commit|machine|started) \\| (.*) \\|$")
	commitCell     = regexp.MustCompile("^`([0-9a-f]{7,40})`")
	expectationRow = regexp.MustCompile("^\\| (✅|❌|⏳) \\| `([^`]+)` \\| ([^|]*) \\|")
)

// FromMarkdown is the entry of a report of which only the Markdown summary
// was committed. Commit and start time come from the page, else from the
// name; an expectation whose metric this simulator no longer knows, or whose
// figure does not parse, is left out.
func FromMarkdown(name string, page []byte) (Entry, error) {
	e := Entry{Name: name}
	if m := reportName.FindStringSubmatch(name); m != nil {
		e.Commit = m[1]
		e.Started, _ = time.Parse("20060102T150405Z", m[3])
	}
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := verdictLine.FindStringSubmatch(line); m != nil && e.Verdict == "" {
			e.Verdict = Verdict(m[1])
			if m[2] != "" {
				e.Verdict = NotJudged
			}
			continue
		}
		if m := envRow.FindStringSubmatch(line); m != nil {
			e.readEnvironment(m[1], m[2])
			continue
		}
		if m := expectationRow.FindStringSubmatch(line); m != nil {
			if f, ok := markdownFigure(m[1], m[2], m[3]); ok {
				e.Figures = append(e.Figures, f)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Entry{}, fmt.Errorf("%s.md: %w", name, err)
	}
	if e.Verdict == "" {
		return Entry{}, fmt.Errorf("%s.md: no PASSED or FAILED line: not a report summary", name)
	}
	return e, nil
}

// readEnvironment takes one row of the summary's environment table.
func (e *Entry) readEnvironment(key, cell string) {
	switch key {
	case "commit":
		if m := commitCell.FindStringSubmatch(cell); m != nil {
			e.Commit = short(m[1])
		}
	case "machine":
		// "2 cores (CPU quota 1.70 cores), AMD EPYC, 23.54GiB, linux/amd64 …": the
		// fields up to the CPU model, as machine writes them.
		parts := strings.Split(cell, ", ")
		e.Machine = strings.Join(parts[:min(2, len(parts))], ", ")
		e.Machine = strings.Replace(e.Machine, "CPU quota ", "quota ", 1)
		e.Machine = strings.Replace(e.Machine, " cores)", ")", 1)
	case "started":
		if t, err := time.Parse("2006-01-02 15:04:05Z", cell); err == nil {
			e.Started = t
		}
	}
}

// markdownFigure reads one row of the summary's expectations table.
func markdownFigure(mark, check, measured string) (Figure, bool) {
	c, err := scenario.ParseCheck(check)
	if err != nil {
		return Figure{}, false
	}
	f := Figure{Check: c, Passed: mark == "✅"}
	measured, _, _ = strings.Cut(strings.TrimSpace(measured), " (not judged")
	if measured == "not measured" {
		return f, true
	}
	v, err := scenario.ParseFormatted(c.Metric.Unit, measured)
	if err != nil {
		return Figure{}, false
	}
	f.Value, f.Measured = v, true
	return f, true
}
