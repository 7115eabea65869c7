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
	simulator, cluster, out string
}

// newFidelityCommand returns `simulator fidelity`: one scenario's simulator run beside its run on
// a real cluster.
func newFidelityCommand() *cobra.Command {
	var f fidelityFlags
	cmd := &cobra.Command{
		Use:   "fidelity --simulator REPORT.json --cluster REPORT.json [--out DIR]",
		Short: "Compare a scenario's run in the simulator with its run on a real cluster",
		Long: `Fidelity puts the main passes of two reports of one scenario file side by side:
one run in the simulator (envtest) and one on a real cluster (run --kubeconfig,
with --registry-metrics). Judged: misplaced pods and pods per architecture
identical, registry requests per image identical, gate-hold p50 within 20%.
Shown beside them: the other latencies, throughput, admission placement and
the registry's requests by kind. It writes DIR/<scenario>/fidelity-<commit>-<time>.{md,json}
and exits 1 when a judged figure differs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFidelity(cmd, f) },
	}
	cmd.Flags().StringVar(&f.simulator, "simulator", "", "the report (JSON) of the run in the simulator")
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "the report (JSON) of the run on a cluster")
	cmd.Flags().StringVar(&f.out, "out", "reports", "directory for the comparison (a <scenario>/ subdirectory is used)")
	_ = cmd.MarkFlagRequired("simulator")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

func runFidelity(cmd *cobra.Command, f fidelityFlags) error {
	var inputs []fidelity.Input
	for _, path := range []string{f.simulator, f.cluster} {
		r, err := report.Load(path)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
		}
		inputs = append(inputs, fidelity.Input{Path: path, Report: r})
	}
	c, err := fidelity.Compare(inputs[0], inputs[1])
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	commit := c.Cluster.Commit
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
