package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/simulator/internal/compare"
	"github.com/archgate/archgate/simulator/internal/repeat"
	"github.com/archgate/archgate/simulator/internal/report"
)

type repeatFlags struct {
	scenario string
	count    int
	out      string
	archgate string
	rejudge  bool
}

// newRepeatCommand returns `simulator repeat`: a scenario run N times, each
// in a fresh control plane, and each figure's median and spread.
func newRepeatCommand() *cobra.Command {
	var f repeatFlags
	cmd := &cobra.Command{
		Use:   "repeat --scenario FILE --count N | repeat REPORT.json...",
		Short: "Run a scenario N times (or read N reports) and print each figure's median and spread",
		Long: `Repeat runs the scenario --count times, one after the other, each as its own
simulator run with a fresh control plane, and writes
reports/<scenario>/repeat-<time>.md: for every headline figure and every figure the
scenario's expectations name, the median, min, max, the spread (max/min − 1) and
each run's value. Given report files instead, it summarises those.

It exits 1 when a run failed, 3 when runs failed only because the machine was
outside the scenario's headroom (saturated, or unsteady between passes), 0
when every run passed.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRepeat(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", "", "scenario file to run")
	fl.IntVar(&f.count, "count", 5, "number of runs")
	fl.StringVar(&f.out, "out", "reports", "directory for reports (a <scenario>/ subdirectory is used)")
	fl.StringVar(&f.archgate, "archgate", defaultArchgate, "the archgate binary the runs use")
	fl.BoolVar(&f.rejudge, "rejudge", false, "judge the given reports again with this simulator's rules (their figures are kept)")
	return cmd
}

// runRepeat runs a scenario count times (or takes report files) and prints each figure's
// median and spread. It is long on purpose: the command's wiring in the order it happens.
func runRepeat(cmd *cobra.Command, args []string, f repeatFlags) error {
	paths := args
	if len(args) == 0 {
		if f.scenario == "" || f.count < 1 {
			return &exitError{code: exitUsage, err: errors.New("give --scenario and a --count of at least 1, or report files")}
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		start := time.Now()
		for i := range f.count {
			fmt.Fprintf(cmd.ErrOrStderr(), "repeat: run %d of %d of %s (%s elapsed)\n", i+1, f.count, f.scenario, time.Since(start).Round(time.Second))
			p, err := compare.RunReport(cmd.Context(), "", []string{self, "run", "--scenario", f.scenario, "--out", f.out, "--archgate", f.archgate, "--quiet"},
				append(os.Environ(), compare.ProgressEnv+"="+progressLines), cmd.ErrOrStderr())
			if err != nil {
				return &exitError{code: exitFailed, err: fmt.Errorf("run %d: %w", i+1, err)}
			}
			paths = append(paths, p)
		}
	}
	reports := make([]*report.Report, len(paths))
	var recorded []string
	for i, p := range paths {
		r, err := report.Load(p)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if f.rejudge {
			recorded = append(recorded, fmt.Sprintf("run %d %s", i+1, r.VerdictName()))
			if err := r.Rejudge(); err != nil {
				return &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", p, err)}
			}
		}
		reports[i] = r
	}
	sum, err := repeat.Summarize(reports)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if f.rejudge {
		sum.Rejudged = "as the runs recorded them: " + strings.Join(recorded, ", ")
	}
	dir := filepath.Join(f.out, sum.Scenario)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	md := filepath.Join(dir, "repeat-"+time.Now().UTC().Format("20060102T150405Z")+".md")
	file, err := os.Create(md)
	if err != nil {
		return err
	}
	sum.WriteMarkdown(file, paths)
	if err := file.Close(); err != nil {
		return err
	}
	sum.WriteMarkdown(cmd.OutOrStdout(), paths)
	fmt.Fprintf(cmd.OutOrStdout(), "\nsummary: %s\n", md)
	switch {
	case sum.Passed+sum.NotJudged < sum.Runs:
		return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d runs failed", sum.Runs-sum.Passed-sum.NotJudged, sum.Runs)}
	case sum.NotJudged > 0:
		return &exitError{code: exitNotJudged, err: fmt.Errorf("%d of %d runs not judged: the machine was saturated or unsteady", sum.NotJudged, sum.Runs)}
	}
	return nil
}
