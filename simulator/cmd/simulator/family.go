package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/simulator/internal/family"
)

// newFamilyCommand returns `simulator family`: the report of a scenario
// family (e.g. scale-1k … scale-30k) from each member's newest report.
func newFamilyCommand() *cobra.Command {
	var prefix, reports string
	var tolerance float64
	cmd := &cobra.Command{
		Use:   "family --prefix scale",
		Short: "Tabulate and plot a scenario family's cost per pod and gate-hold against size; fail when the cost is not flat",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			points, err := family.Load(reports, prefix)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			flat, flatErr := family.CheckFlat(points, tolerance)
			dir := filepath.Join(reports, prefix)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			base := filepath.Join(dir, time.Now().UTC().Format("20060102T150405Z"))
			if err := family.Plot(points, base+".svg"); err != nil {
				return fmt.Errorf("plotting: %w", err)
			}
			md, err := os.Create(base + ".md")
			if err != nil {
				return err
			}
			family.WriteMarkdown(md, prefix, points, flat, flatErr, filepath.Base(base)+".svg")
			if err := md.Close(); err != nil {
				return err
			}
			family.WriteMarkdown(cmd.OutOrStdout(), prefix, points, flat, flatErr, base+".svg")
			if flatErr != nil {
				return &exitError{code: exitFailed, err: flatErr}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&prefix, "prefix", "scale", "the family: scenarios named <prefix>-*")
	fl.StringVar(&reports, "reports", "reports", "reports directory")
	fl.Float64Var(&tolerance, "tolerance", 0.2, "largest allowed deviation of a point's cost per pod from the family's mean")
	return cmd
}
