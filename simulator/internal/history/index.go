package history

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TrendFile and IndexFile are the files Write adds to a scenario's directory.
const (
	TrendFile = "trend.svg"
	IndexFile = "index.md"
)

// maxHeadline bounds the figures a page and its plot show.
const maxHeadline = 12

// Index is one scenario's reports.
type Index struct {
	// Scenario is the directory's name.
	Scenario string
	// Entries are the reports, oldest first.
	Entries []Entry
	// Summaries are the other pages of the directory (repeat and compare
	// summaries, family pages), by file name.
	Summaries []string
	// Unreadable lists the reports left out, with why.
	Unreadable []string
}

// Load indexes the reports of dir (reports/<scenario>) among names, the
// files of dir to consider (the committed ones; base names). A report is its
// summary JSON when that is among names, else its Markdown page.
func Load(dir string, names []string) Index {
	ix := Index{Scenario: filepath.Base(dir)}
	for _, n := range names {
		stem, ok := strings.CutSuffix(n, ".md")
		switch {
		case !ok || n == IndexFile:
			continue
		case !IsReportName(stem):
			ix.Summaries = append(ix.Summaries, n)
			continue
		}
		e, err := loadEntry(dir, stem, slices.Contains(names, stem+".json"))
		if err != nil {
			ix.Unreadable = append(ix.Unreadable, err.Error())
			continue
		}
		ix.Entries = append(ix.Entries, e)
	}
	slices.SortFunc(ix.Entries, func(a, b Entry) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.Name, b.Name))
	})
	slices.Sort(ix.Summaries)
	return ix
}

// loadEntry reads one report, from its JSON summary when there is one.
func loadEntry(dir, stem string, hasJSON bool) (Entry, error) {
	if hasJSON {
		r, err := report.Load(filepath.Join(dir, stem+".json"))
		if err != nil {
			return Entry{}, err
		}
		return FromReport(stem, r), nil
	}
	page, err := os.ReadFile(filepath.Join(dir, stem+".md"))
	if err != nil {
		return Entry{}, err
	}
	return FromMarkdown(stem, page)
}

// Headline returns the checks the page and the plot show: the thresholds
// (not the exact counts) of the newest report, in its order, at most
// maxHeadline. Their values and goals are the newest report's.
func (ix Index) Headline() []scenario.Check {
	for i := len(ix.Entries) - 1; i >= 0; i-- {
		var out []scenario.Check
		for _, f := range ix.Entries[i].Figures {
			if f.Check.Op != scenario.OpEqual && f.Check.Op != scenario.OpNotEqual && len(out) < maxHeadline {
				out = append(out, f.Check)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// Counts returns how many reports passed, failed and were not judged.
func (ix Index) Counts() (passed, failed, notJudged int) {
	for _, e := range ix.Entries {
		switch e.Verdict {
		case Passed:
			passed++
		case NotJudged:
			notJudged++
		default:
			failed++
		}
	}
	return passed, failed, notJudged
}

// WriteMarkdown writes the scenario's page: counts, the trend plot (trend
// names its file, "" for none), and a row per report, newest first, with
// the headline figures; a figure whose check failed in that report is
// marked ❌, one its report did not check is "—".
func (ix Index) WriteMarkdown(w io.Writer, trend string) error {
	head := ix.Headline()
	passed, failed, notJudged := ix.Counts()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s — committed reports\n\n", ix.Scenario)
	fmt.Fprintf(&b, "Written by `make index` from the reports committed in this directory (reports/README.md): %d reports, %d passed, %d failed, %d not judged (the machine was saturated or unsteady). Newest first; each figure as its report measured it, ❌ where that report's check failed. A column's check and goal are the newest report's.\n\n",
		len(ix.Entries), passed, failed, notJudged)
	if trend != "" {
		fmt.Fprintf(&b, "![%s across its reports](%s)\n\n", ix.Scenario, trend)
	}
	b.WriteString("| report | commit | started (UTC) | machine | verdict |")
	for _, c := range head {
		fmt.Fprintf(&b, " %s |", columnTitle(c))
	}
	b.WriteString("\n|---|---|---|---|---|" + strings.Repeat("---|", len(head)) + "\n")
	for _, e := range slices.Backward(ix.Entries) {
		fmt.Fprintf(&b, "| [%s](%s.md) | `%s` | %s | %s | %s |", e.Name, e.Name, e.Commit, e.Started.Format("2006-01-02 15:04"), e.Machine, e.Verdict)
		for _, c := range head {
			fmt.Fprintf(&b, " %s |", cell(e, c.Metric.Name))
		}
		b.WriteString("\n")
	}
	if len(ix.Summaries) > 0 {
		b.WriteString("\nRepeated runs, comparisons and families:\n\n")
		for _, s := range ix.Summaries {
			fmt.Fprintf(&b, "- [%s](%s)\n", strings.TrimSuffix(s, ".md"), s)
		}
	}
	if len(ix.Unreadable) > 0 {
		b.WriteString("\nLeft out (unreadable):\n\n")
		for _, u := range ix.Unreadable {
			fmt.Fprintf(&b, "- %s\n", u)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// columnTitle is a headline column's title: the metric, its check and goal.
func columnTitle(c scenario.Check) string {
	t := fmt.Sprintf("`%s` %s %s", c.Metric.Name, c.Op, scenario.FormatValue(c.Metric.Unit, c.Value))
	if c.HasGoal {
		t += ", goal " + c.GoalText()
	}
	return t
}

// cell is one report's figure of metric.
func cell(e Entry, metric string) string {
	f, ok := e.Figure(metric)
	switch {
	case !ok:
		return "—"
	case !f.Measured:
		return "not measured"
	case !f.Passed && e.Verdict != NotJudged:
		return scenario.FormatValue(f.Check.Metric.Unit, f.Value) + " ❌"
	default:
		return scenario.FormatValue(f.Check.Metric.Unit, f.Value)
	}
}

// Files renders dir's index page and trend plot (none when no report has a
// headline figure), by path.
func (ix Index) Files(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	trend := ""
	if len(ix.Headline()) > 0 && len(ix.Entries) > 0 {
		var svg bytes.Buffer
		if err := ix.TrendPlot(&svg); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, TrendFile), err)
		}
		trend = TrendFile
		out[filepath.Join(dir, TrendFile)] = svg.Bytes()
	}
	var page bytes.Buffer
	if err := ix.WriteMarkdown(&page, trend); err != nil {
		return nil, err
	}
	out[filepath.Join(dir, IndexFile)] = page.Bytes()
	return out, nil
}

// WriteOverview writes the page of every scenario's index: its reports,
// verdicts and the newest report.
func WriteOverview(w io.Writer, indexes []Index) error {
	var b strings.Builder
	b.WriteString("# Committed reports\n\nWritten by `make index`; one page per scenario with its reports and their trend (README.md says what is committed and why).\n\n")
	b.WriteString("| scenario | reports | passed / failed / not judged | newest | its verdict |\n|---|---|---|---|---|\n")
	for _, ix := range indexes {
		if len(ix.Entries) == 0 {
			continue
		}
		passed, failed, notJudged := ix.Counts()
		newest := ix.Entries[len(ix.Entries)-1]
		fmt.Fprintf(&b, "| [%s](%s/%s) | %d | %d / %d / %d | %s (`%s`) | %s |\n", ix.Scenario, ix.Scenario, IndexFile,
			len(ix.Entries), passed, failed, notJudged, newest.Started.Format("2006-01-02"), newest.Commit, newest.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
