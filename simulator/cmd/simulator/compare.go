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
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/vcs"
)

type compareFlags struct {
	scenario  string
	base      string
	head      string
	reports   string
	alpha     float64
	threshold float64
	minDelta  time.Duration
	maxOther  float64
	count     int
	calTol    float64
	runsAlpha float64
}

func newCompareCommand() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare (BASE.json HEAD.json | --scenario NAME --base REF [--head REF])",
		Short: "Compare two reports of a scenario; exit 1 on a regression or a failed base run",
		Long: `Compare prints, per metric, both values, the change, the test and a verdict.
Correctness is exact: a failed head run (expectations missed, errors, a deadline
hit) or any increase of misplaced, gated or unbound pods or of recorder drops is
a regression. Medians are tested with Mann–Whitney U on the per-pod samples,
p90/p99 with a bootstrap interval of their difference, throughput on the bind
counts of the seconds with a backlog; those count only when significant at
--alpha and moved by at least --threshold. A failed base run is flagged and the
comparison refused (exit 1).

With --scenario, reports are looked up under --reports by the code they ran
(git tree). --base and --head are git refs; --head defaults to the work tree as
it is. Missing reports are produced by running the scenario — for a ref, in a
git worktree under .cache/compare/. When both sides are the same code (an A/A
comparison), two distinct runs are used.

With --count N, each side is built once (a ref in a git worktree, with the
control plane its own commit pins) and run N times, interleaved (base, head,
base, head …), each run in a fresh control plane. Every figure is then tested
across runs with the Mann–Whitney U test of golang.org/x/perf/benchmath (as
benchstat does) at --runs-alpha; the change is the Hodges–Lehmann estimate of
head/base with the interval that inverting the test gives, and beside it the
smallest change the base runs' spread lets N runs detect. Runs from different
machines or Kubernetes versions, or whose machine speed (calibration) differs
by more than --calibration-tolerance, are refused.`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return runCompare(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", "", "scenario name (scenarios/<name>.yaml) or file")
	fl.StringVar(&f.base, "base", "", "git ref of the base side")
	fl.StringVar(&f.head, "head", "", "git ref of the head side (default: the work tree)")
	fl.StringVar(&f.reports, "reports", "reports", "reports directory")
	fl.Float64Var(&f.alpha, "alpha", compare.DefaultAlpha, "significance level")
	fl.Float64Var(&f.threshold, "threshold", compare.DefaultThreshold, "minimum relative change of a median to count")
	fl.DurationVar(&f.minDelta, "min-latency-delta", time.Duration(compare.DefaultMinLatencyDelta*float64(time.Second)),
		"minimum absolute change of a median latency to count")
	fl.Float64Var(&f.maxOther, "max-foreign-cpu", compare.DefaultMaxForeignCPU,
		"share of the machine's CPU other work may have used during a run; above it verdicts are inconclusive")
	fl.IntVar(&f.count, "count", 0, "run each side this many times, interleaved, and test across runs (0: compare one report a side, per pod)")
	fl.Float64Var(&f.calTol, "calibration-tolerance", compare.DefaultCalibrationTolerance, "with --count: largest relative difference of the sides' median machine speed")
	fl.Float64Var(&f.runsAlpha, "runs-alpha", compare.DefaultRunsAlpha, "with --count: significance level of the test across runs")
	return cmd
}

func runCompare(cmd *cobra.Command, args []string, f compareFlags) error {
	if f.count > 0 {
		return runCompareRuns(cmd, f)
	}
	opts := compare.Options{Alpha: f.alpha, Threshold: f.threshold, MinLatencyDelta: f.minDelta.Seconds(), MaxForeignCPU: f.maxOther}
	var base, head *report.Report
	var baseName, headName string
	switch {
	case len(args) == 2:
		var err error
		if base, err = report.Load(args[0]); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if head, err = report.Load(args[1]); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		baseName, headName = args[0], args[1]
		for _, n := range []compare.Named{{Name: baseName, Report: base}, {Name: headName, Report: head}} {
			if !n.Report.HasSamples() {
				return &exitError{code: exitUsage, err: fmt.Errorf("%s: no per-pod samples (its %s file stays on the machine that ran it): compare it with --count, or run the scenario again", n.Name, report.RawSuffix)}
			}
		}
	case len(args) == 0 && f.scenario != "" && f.base != "":
		found, err := reportsByRef(cmd, f)
		if err != nil {
			return err
		}
		base, head = found[0].Report, found[1].Report
		baseName, headName = found[0].Path, found[1].Path
	default:
		return &exitError{code: exitUsage, err: errors.New("give two report files, or --scenario and --base")}
	}
	if base.Scenario.Name != head.Scenario.Name {
		return &exitError{code: exitUsage, err: fmt.Errorf("reports of different scenarios: %s and %s", base.Scenario.Name, head.Scenario.Name)}
	}
	res := compare.Compare(base, head, opts)
	compare.Print(cmd.OutOrStdout(), compare.Named{Name: baseName, Report: base}, compare.Named{Name: headName, Report: head}, res, opts)
	if res.Regressions > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d regression(s)", res.Regressions)}
	}
	if res.BaseFailed() {
		return &exitError{code: exitFailed, err: fmt.Errorf("the base run failed (%s): nothing to compare against", baseName)}
	}
	return nil
}

// runOptions resolves the repository root, the scenario's name and file and
// the reports directory of a comparison by refs.
func runOptions(cmd *cobra.Command, f compareFlags) (compare.RunOptions, error) {
	wd, _ := os.Getwd()
	root, err := vcs.Root(cmd.Context(), wd)
	if err != nil {
		return compare.RunOptions{}, &exitError{code: exitUsage, err: err}
	}
	name, file := f.scenario, f.scenario
	if strings.HasSuffix(name, ".yaml") {
		name = strings.TrimSuffix(filepath.Base(name), ".yaml")
	} else {
		file = filepath.Join(root, "scenarios", name+".yaml")
	}
	if _, err := os.Stat(file); err != nil {
		return compare.RunOptions{}, &exitError{code: exitUsage, err: fmt.Errorf("scenario %s: %w", name, err)}
	}
	reports, err := filepath.Abs(f.reports)
	if err != nil {
		return compare.RunOptions{}, err
	}
	return compare.RunOptions{Root: root, Scenario: name, ScenarioFile: file, ReportsDir: reports, Output: cmd.ErrOrStderr()}, nil
}

// reportsByRef finds (or produces) the base and head reports.
func reportsByRef(cmd *cobra.Command, f compareFlags) ([2]compare.Found, error) {
	ctx := cmd.Context()
	var out [2]compare.Found
	ro, err := runOptions(cmd, f)
	if err != nil {
		return out, err
	}
	root, name, reports := ro.Root, ro.Scenario, ro.ReportsDir
	sides := [2]compare.Side{}
	for i, ref := range []string{f.base, f.head} {
		if sides[i], err = compare.ResolveSide(ctx, root, ref); err != nil {
			return out, &exitError{code: exitUsage, err: err}
		}
	}
	same := sides[0].Tree == sides[1].Tree
	need := map[int]int{0: 1, 1: 1}
	if same {
		need = map[int]int{0: 2} // A/A: two distinct runs of the same code
	}
	for i, n := range need {
		var prepared *compare.Prepared // built once per side, on its first missing report
		for {
			have := compare.FindReports(reports, name, sides[i].Tree)
			if len(have) >= n {
				break
			}
			before := len(have)
			if prepared == nil {
				p, err := compare.Prepare(ctx, sides[i], ro)
				if err != nil {
					return out, &exitError{code: exitFailed, err: err}
				}
				prepared = &p
			}
			if err := compare.Produce(ctx, *prepared, ro); err != nil {
				return out, &exitError{code: exitFailed, err: err}
			}
			if len(compare.FindReports(reports, name, sides[i].Tree)) <= before {
				return out, &exitError{code: exitFailed, err: fmt.Errorf("running %s at %s produced no report", name, sides[i].Label)}
			}
		}
	}
	if same {
		have := compare.FindReports(reports, name, sides[0].Tree)
		out[0], out[1] = have[len(have)-2], have[len(have)-1]
		return out, nil
	}
	for i := range sides {
		have := compare.FindReports(reports, name, sides[i].Tree)
		out[i] = have[len(have)-1]
	}
	return out, nil
}

// runCompareRuns runs each side f.count times, interleaved, and compares
// the runs figure by figure.
func runCompareRuns(cmd *cobra.Command, f compareFlags) error {
	if f.scenario == "" || f.base == "" {
		return &exitError{code: exitUsage, err: errors.New("--count needs --scenario and --base")}
	}
	ctx := cmd.Context()
	log := cmd.ErrOrStderr()
	ro, err := runOptions(cmd, f)
	if err != nil {
		return err
	}
	var sides [2]compare.Prepared
	for i, ref := range []string{f.base, f.head} {
		side, err := compare.ResolveSide(ctx, ro.Root, ref)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if sides[i], err = compare.Prepare(ctx, side, ro); err != nil {
			return &exitError{code: exitFailed, err: err}
		}
	}
	var runs [2][]*report.Report
	start := time.Now()
	for i := range f.count {
		for s, p := range sides {
			fmt.Fprintf(log, "compare: run %d of %d of %s at %s (%s elapsed)\n", i+1, f.count, ro.Scenario, p.Side.Label, time.Since(start).Round(time.Second))
			path, err := p.Run(ctx, ro.ReportsDir, log)
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			r, err := report.Load(path)
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			runs[s] = append(runs[s], r)
		}
	}
	res, err := compare.CompareRuns(runs[0], runs[1], compare.RunsOptions{Alpha: f.runsAlpha, CalibrationTolerance: f.calTol})
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "base %s (%.12s), head %s (%.12s)\n", sides[0].Side.Label, sides[0].Side.Commit, sides[1].Side.Label, sides[1].Side.Commit)
	compare.PrintRuns(cmd.OutOrStdout(), res)
	if res.Regressions > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d regression(s)", res.Regressions)}
	}
	return nil
}
