package compare

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/vcs"
)

// WorktreeDir is where compare checks out other commits, relative to the
// repository root (.cache/ is git-ignored).
const WorktreeDir = ".cache/compare"

// Side is the code one side of a comparison ran: a git ref, or the work
// tree as it is.
type Side struct {
	// Label is what the user asked for (a ref, or "work tree").
	Label string
	// Commit is the commit hash.
	Commit string
	// Tree identifies the content (see vcs.State.Tree); reports match on it.
	Tree string
	// WorkTree is true for the current work tree (no checkout needed).
	WorkTree bool
}

// ResolveSide resolves ref in the repository at root; an empty ref is the
// work tree as it is (dirty or not).
func ResolveSide(ctx context.Context, root, ref string) (Side, error) {
	if ref == "" {
		st, err := vcs.Describe(ctx, root)
		if err != nil {
			return Side{}, err
		}
		return Side{Label: "work tree", Commit: st.Commit, Tree: st.Tree, WorkTree: true}, nil
	}
	commit, tree, err := vcs.Resolve(ctx, root, ref)
	if err != nil {
		return Side{}, err
	}
	return Side{Label: ref, Commit: commit, Tree: tree}, nil
}

// Found is a report on disk.
type Found struct {
	// Path of the JSON file.
	Path string
	// Report is its content.
	Report *report.Report
}

// FindReports returns the reports of scenario under dir whose code tree is
// tree, oldest first. Unreadable files and other schema versions are skipped.
func FindReports(dir, scenario, tree string) []Found {
	files, _ := filepath.Glob(filepath.Join(dir, scenario, "*.json"))
	var out []Found
	for _, f := range files {
		r, err := report.Load(f)
		if err != nil || r.Environment.Tree != tree || r.Scenario.Name != scenario {
			continue
		}
		out = append(out, Found{Path: f, Report: r})
	}
	slices.SortFunc(out, func(a, b Found) int { return a.Report.StartedAt.Compare(b.Report.StartedAt) })
	return out
}

// RunOptions say how to produce a missing report.
type RunOptions struct {
	// Root is the repository root.
	Root string
	// Scenario is the scenario name; ScenarioFile its file in the work tree.
	Scenario, ScenarioFile string
	// ReportsDir is where reports go (absolute).
	ReportsDir string
	// Output receives the run's output.
	Output io.Writer
}

// Produce runs the scenario for side: in the work tree, or in a git
// worktree of the commit under WorktreeDir, with that commit's simulator
// and scenario file (the current scenario file when the commit has none).
// The run's own verdict does not matter here: a report is all it takes.
func Produce(ctx context.Context, side Side, o RunOptions) error {
	dir, scenarioFile := o.Root, o.ScenarioFile
	if !side.WorkTree {
		dir = filepath.Join(o.Root, WorktreeDir, side.Commit[:12])
		if _, err := os.Stat(dir); err != nil {
			if _, err := vcs.Git(ctx, o.Root, "worktree", "add", "--detach", dir, side.Commit); err != nil {
				return err
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "simulator", "cmd", "simulator")); err != nil {
			return fmt.Errorf("%s (%.12s) has no simulator (simulator/cmd/simulator): cannot run the scenario there", side.Label, side.Commit)
		}
		rel, err := filepath.Rel(o.Root, o.ScenarioFile)
		if err == nil && !strings.HasPrefix(rel, "..") {
			if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
				scenarioFile = filepath.Join(dir, rel)
			}
		}
	}
	abs, err := filepath.Abs(scenarioFile)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./simulator/cmd/simulator", "run", "--scenario", abs, "--out", o.ReportsDir, "--quiet")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = o.Output, o.Output
	cmd.Env = os.Environ()
	if os.Getenv("ARCHGATE_ASSETS") == "" {
		// Worktrees have no bin/: use the main checkout's control plane.
		cmd.Env = append(cmd.Env, "ARCHGATE_ASSETS="+filepath.Join(o.Root, "bin", "k8s"))
	}
	fmt.Fprintf(o.Output, "compare: running %s at %s (%s) in %s\n", o.Scenario, side.Label, shortTree(side), dir)
	err = cmd.Run()
	if _, ok := err.(*exec.ExitError); ok {
		return nil // the run failed its expectations or part-way; the caller looks for the report
	}
	return err
}

func shortTree(s Side) string {
	if s.WorkTree {
		return "work tree"
	}
	return s.Commit[:12]
}
