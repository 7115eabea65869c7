package compare

import (
	"bufio"
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
// tree and whose per-pod samples are on disk (a committed summary without its
// raw file cannot be tested; the scenario runs again), oldest first.
// Unreadable files and other schema versions are skipped.
func FindReports(dir, scenario, tree string) []Found {
	files, _ := filepath.Glob(filepath.Join(dir, scenario, "*.json"))
	var out []Found
	for _, f := range files {
		r, err := report.Load(f)
		if err != nil || r.Environment.Tree != tree || r.Scenario.Name != scenario || !r.HasSamples() {
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

// Produce runs the scenario once for a side Prepare made ready. The run's
// own verdict does not matter here: a report is all it takes.
func Produce(ctx context.Context, p Prepared, o RunOptions) error {
	fmt.Fprintf(o.Output, "compare: running %s at %s (%s) in %s\n", o.Scenario, p.Side.Label, shortTree(p.Side), p.Dir)
	_, err := p.Run(ctx, o.ReportsDir, o.Output)
	return err
}

// Run runs the side's scenario once from the side's own tree, so that the
// run installs that side's CRDs and its report names that side's commit, and
// returns the report's path.
func (p Prepared) Run(ctx context.Context, reports string, w io.Writer) (string, error) {
	return RunReport(ctx, p.Dir, p.Argv(reports), p.Env(), w)
}

// RunReport runs one `simulator run` command line in dir (the current
// directory when empty) with env (the current environment when nil),
// streams its output to w and returns the path of
// the report it wrote. A run that failed its expectations still wrote a
// report: that is not an error here, a run without a report is.
func RunReport(ctx context.Context, dir string, argv, env []string, w io.Writer) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stderr = w
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var path string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		if p, ok := strings.CutPrefix(line, "report: "); ok {
			path = p
		}
	}
	waitErr := cmd.Wait()
	if path == "" {
		return "", fmt.Errorf("%s wrote no report: %v", strings.Join(argv, " "), waitErr)
	}
	return path, nil
}

func shortTree(s Side) string {
	if s.WorkTree {
		return "work tree"
	}
	return s.Commit[:12]
}

// Prepared is a side ready to run: its checkout, its simulator and archgate
// binaries and the control plane its own commit pins.
type Prepared struct {
	Side Side
	// Dir is the checkout (the repository root for the work tree).
	Dir string
	// Simulator and Archgate are the binaries built from Dir; Assets the
	// control plane's directory (ARCHGATE_ASSETS).
	Simulator, Archgate, Assets string
	// ScenarioFile is the side's scenario file: the checkout's own, else
	// the work tree's.
	ScenarioFile string
}

// Prepare checks the side out (a git worktree under WorktreeDir for a ref),
// builds its simulator and archgate binaries into its bin/, and makes its
// control plane current with its own hack/control-plane.sh: the main
// checkout's bin/k8s is linked in first, so the script rebuilds only when
// the side pins another Kubernetes or etcd version.
func Prepare(ctx context.Context, side Side, o RunOptions) (Prepared, error) {
	p := Prepared{Side: side, Dir: o.Root, ScenarioFile: o.ScenarioFile}
	if !side.WorkTree {
		p.Dir = filepath.Join(o.Root, WorktreeDir, side.Commit[:12])
		if _, err := os.Stat(p.Dir); err != nil {
			if _, err := vcs.Git(ctx, o.Root, "worktree", "add", "--detach", p.Dir, side.Commit); err != nil {
				return p, err
			}
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "simulator", "cmd", "simulator")); err != nil {
			return p, fmt.Errorf("%s (%.12s) has no simulator (simulator/cmd/simulator): cannot run the scenario there", side.Label, side.Commit)
		}
		if rel, err := filepath.Rel(o.Root, o.ScenarioFile); err == nil && !strings.HasPrefix(rel, "..") {
			if _, err := os.Stat(filepath.Join(p.Dir, rel)); err == nil {
				p.ScenarioFile = filepath.Join(p.Dir, rel)
			}
		}
		if err := linkAssets(filepath.Join(o.Root, "bin", "k8s"), filepath.Join(p.Dir, "bin", "k8s")); err != nil {
			return p, err
		}
	}
	p.Simulator = filepath.Join(p.Dir, "bin", "simulator")
	p.Archgate = filepath.Join(p.Dir, "bin", "archgate")
	p.Assets = filepath.Join(p.Dir, "bin", "k8s")
	steps := [][]string{
		{"go", "build", "-o", p.Simulator, "./simulator/cmd/simulator"},
		{"go", "build", "-o", p.Archgate, "./operator/cmd/archgate"},
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "hack", "control-plane.sh")); err == nil {
		steps = append(steps, []string{"hack/control-plane.sh"})
	}
	fmt.Fprintf(o.Output, "compare: preparing %s (%s) in %s\n", side.Label, shortTree(side), p.Dir)
	for _, argv := range steps {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = p.Dir
		cmd.Stdout, cmd.Stderr = o.Output, o.Output
		if err := cmd.Run(); err != nil {
			return p, fmt.Errorf("%s in %s: %w", strings.Join(argv, " "), p.Dir, err)
		}
	}
	return p, nil
}

// linkAssets hard-links the files of from into to when to has none, so a
// side that pins the same control plane reuses it without a rebuild.
func linkAssets(from, to string) error {
	if _, err := os.Stat(filepath.Join(to, "VERSION")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return nil // nothing built yet: the side's script builds it
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		dst := filepath.Join(to, e.Name())
		_ = os.Remove(dst)
		if err := os.Link(filepath.Join(from, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
}

// Argv is the command line of one run of the side's scenario, writing its
// report under reports.
func (p Prepared) Argv(reports string) []string {
	return []string{p.Simulator, "run", "--scenario", p.ScenarioFile, "--out", reports, "--archgate", p.Archgate, "--quiet"}
}

// Env is the environment of the side's runs: its own control plane, and progress lines on
// stderr, which RunReport passes through, so that a long compare is never silent. (An
// environment variable rather than a flag: a side's simulator may predate it.)
func (p Prepared) Env() []string {
	return append(os.Environ(), "ARCHGATE_ASSETS="+p.Assets, ProgressEnv+"=lines")
}

// ProgressEnv names the environment variable that sets the default of a run's --progress.
const ProgressEnv = "SIMULATOR_PROGRESS"
