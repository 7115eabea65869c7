package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/simulator/internal/fidelity"
	"github.com/archgate/archgate/simulator/internal/report"
)

type fidelityFlags struct {
	simulator, cluster []string
	out                string
}

// newFidelityCommand returns `simulator fidelity`: one scenario's simulator run beside its run on
// a real cluster.
func newFidelityCommand() *cobra.Command {
	var f fidelityFlags
	cmd := &cobra.Command{
		Use:   "fidelity --simulator REPORT.json --cluster REPORT.json [--simulator … --cluster …] [--out DIR]",
		Short: "Compare a scenario's runs in the simulator with its runs on a real cluster",
		Long: `Fidelity puts the main passes of reports of one scenario file side by side: runs
in the simulator (envtest) and on a real cluster (run --kubeconfig, with
--registry-metrics), paired in the order given (the nth --simulator with the nth
--cluster; run each pair back to back). Judged: misplaced pods and pods per
architecture identical in every pair, registry requests per image identical in
every pair, and the median of the pairs' gate-hold p50 ratios within 20%.
Shown beside them: the other latencies, throughput, admission placement and
the registry's requests by kind. It writes DIR/<scenario>/fidelity-<commit>-<time>.{md,json}
and exits 1 when a judged figure differs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFidelity(cmd, f) },
	}
	cmd.Flags().StringArrayVar(&f.simulator, "simulator", nil, "the report (JSON) of a run in the simulator (repeat for several pairs)")
	cmd.Flags().StringArrayVar(&f.cluster, "cluster", nil, "the report (JSON) of the run on a cluster paired with it (as many as --simulator)")
	cmd.Flags().StringVar(&f.out, "out", "reports", "directory for the comparison (a <scenario>/ subdirectory is used)")
	_ = cmd.MarkFlagRequired("simulator")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

func runFidelity(cmd *cobra.Command, f fidelityFlags) error {
	if len(f.simulator) != len(f.cluster) {
		return &exitError{code: exitUsage, err: fmt.Errorf("%d --simulator reports and %d --cluster reports: give them in pairs", len(f.simulator), len(f.cluster))}
	}
	load := func(path string) (fidelity.Input, error) {
		r, err := report.Load(path)
		if err != nil {
			return fidelity.Input{}, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
		}
		return fidelity.Input{Path: path, Report: r}, nil
	}
	var pairs []fidelity.Pair
	for i := range f.simulator {
		sim, err := load(f.simulator[i])
		if err != nil {
			return err
		}
		cluster, err := load(f.cluster[i])
		if err != nil {
			return err
		}
		pairs = append(pairs, fidelity.Pair{Simulator: sim, Cluster: cluster})
	}
	c, err := fidelity.Compare(pairs...)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	commit := c.Pairs[c.Median].Cluster.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	stem := fmt.Sprintf("fidelity-%s-%s", commit, time.Now().UTC().Format("20060102T150405Z"))
	page, err := c.Write(filepath.Join(f.out, c.Scenario), stem)
	if err != nil {
		return err
	}
	fmt.Fprint(cmd.OutOrStdout(), c.Markdown())
	fmt.Fprintf(cmd.OutOrStdout(), "\ncomparison: %s\n", page)
	if !c.Passed {
		return &exitError{code: exitFailed, err: errors.New("the simulator and the cluster differ beyond the bounds (see Differences)")}
	}
	return nil
}
