package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archgate/archgate/simulator/internal/history"
	"github.com/archgate/archgate/simulator/internal/vcs"
)

// overviewFile is the page of every scenario's index, in the reports directory.
const overviewFile = "index.md"

type indexFlags struct {
	reports string
	check   bool
}

// newIndexCommand returns `simulator index`: the page and trend plot of each
// scenario's committed reports.
func newIndexCommand() *cobra.Command {
	var f indexFlags
	cmd := &cobra.Command{
		Use:   "index [--reports DIR] [--check]",
		Short: "Write each scenario's report index (index.md, trend.svg) from the committed reports",
		Long: `Index writes, for each scenario directory under --reports, index.md (every
committed report with its commit, date, machine, verdict and headline figures,
newest first) and trend.svg (each headline figure across the reports, with the
newest check's guard and goal), and --reports/index.md listing the scenarios.
Only files git tracks are read, so runs that were not committed stay out of the
history; outside a git work tree every file is read.

With --check it writes nothing and exits 1 when a page or plot is not what the
committed reports give (a report committed without running make index).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runIndex(cmd, f) },
	}
	cmd.Flags().StringVar(&f.reports, "reports", "reports", "the reports directory")
	cmd.Flags().BoolVar(&f.check, "check", false, "compare with the files on disk instead of writing them")
	return cmd
}

func runIndex(cmd *cobra.Command, f indexFlags) error {
	byDir, err := reportFiles(cmd, f.reports)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	files := map[string][]byte{}
	var indexes []history.Index
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		ix := history.Load(dir, byDir[dir])
		if len(ix.Entries) == 0 {
			continue
		}
		out, err := ix.Files(dir)
		if err != nil {
			return err
		}
		maps.Copy(files, out)
		indexes = append(indexes, ix)
		for _, u := range ix.Unreadable {
			fmt.Fprintf(cmd.ErrOrStderr(), "index: left out %s\n", u)
		}
	}
	var overview bytes.Buffer
	if err := history.WriteOverview(&overview, indexes); err != nil {
		return err
	}
	files[filepath.Join(f.reports, overviewFile)] = overview.Bytes()
	if f.check {
		return checkFiles(cmd, files)
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(path, files[path], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "index: %d scenarios under %s\n", len(indexes), f.reports)
	return nil
}

// checkFiles fails when a file on disk differs from what index writes.
func checkFiles(cmd *cobra.Command, files map[string][]byte) error {
	var stale []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		have, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(have, files[path]) {
			stale = append(stale, path)
		}
	}
	if len(stale) > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("not what the committed reports give (run make index): %s", strings.Join(stale, ", "))}
	}
	fmt.Fprintln(cmd.OutOrStdout(), "index: up to date")
	return nil
}

// reportFiles returns the files of each scenario directory under reports
// (base names): those git tracks, or every file outside a work tree.
func reportFiles(cmd *cobra.Command, reports string) (map[string][]string, error) {
	entries, err := os.ReadDir(reports)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range entries {
		if e.IsDir() {
			out[filepath.Join(reports, e.Name())] = nil
		}
	}
	tracked, err := vcs.Git(cmd.Context(), reports, "ls-files", "-z", "--full-name", ".")
	if err != nil {
		return listAll(out)
	}
	root, err := vcs.Root(cmd.Context(), reports)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(reports)
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Split(tracked, "\x00") {
		rel, err := filepath.Rel(abs, filepath.Join(root, p))
		if err != nil || p == "" {
			continue
		}
		dir, name := filepath.Split(rel)
		if d := filepath.Join(reports, filepath.Clean(dir)); dir != "" && !strings.Contains(filepath.Clean(dir), string(filepath.Separator)) {
			out[d] = append(out[d], name)
		}
	}
	return out, nil
}

// listAll fills each directory with every file in it.
func listAll(dirs map[string][]string) (map[string][]string, error) {
	for dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listing %s", dir), err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				dirs[dir] = append(dirs[dir], e.Name())
			}
		}
	}
	return dirs, nil
}
