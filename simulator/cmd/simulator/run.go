package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/klog/v2/textlogger"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/simulator/internal/compare"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/runner"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// defaultArchgate is where make archgate puts the binary.
const defaultArchgate = "bin/archgate"

// defaultControllerManager is where make cluster-components puts kube-controller-manager.
const defaultControllerManager = "bin/cluster/kube-controller-manager"

type runFlags struct {
	scenario     string
	expectations string
	kubeconfig   string
	out          string
	baseline     bool
	quiet        bool
	progress     string
	logFile      string
	logVerbosity int
	archgate     string
	kcm          string
	inProcess    bool
	profile      bool
	profileTime  time.Duration
	existing     existingFlags
}

// existingFlags are the flags of a run against an existing cluster (--kubeconfig).
type existingFlags struct {
	image, registry, registryCA, registryAuth, registryMetrics string
}

func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --scenario FILE",
		Short: "Run a scenario, write its report and check its expectations",
		Long: `Run starts a control plane (envtest from bin/k8s, or --kubeconfig), the embedded
kube-scheduler, the node pools, the fake registry and the operator in-process,
creates the workload (after an optional baseline pass without the operator),
applies the timeline and writes reports/<scenario>/<commit>[-dirty]-<time>.{json,md}
with latency and timeline plots. It exits 1 when an expectation is missed.

With --kubeconfig it runs against that existing cluster instead: the node pools as
kwok nodes of the run, the cluster's own scheduler, archgate installed from deploy/
(--image) and configured through the ClusterPodPlacementConfig, the images from
--registry; it removes everything it created at the end (simulator cleanup after a
killed run). See docs/simulator-existing-cluster.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScenario(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", "", "scenario file (required)")
	fl.StringVar(&f.expectations, "expectations", "", "expectations file that replaces the scenario's own")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "run against this existing cluster instead of starting envtest (docs/simulator-existing-cluster.md)")
	fl.StringVar(&f.existing.image, "image", "", "with --kubeconfig: archgate's image, one the cluster can pull, installed with make deploy when the cluster has no archgate operator")
	fl.StringVar(&f.existing.registry, "registry", "", "with --kubeconfig: HOST:PORT of a registry the cluster's pods reach that serves the scenario's catalog (simulator catalog writes it)")
	fl.StringVar(&f.existing.registryCA, "registry-ca", "", "with --kubeconfig: the PEM CA file of --registry")
	fl.StringVar(&f.existing.registryAuth, "registry-auth", "", "with --kubeconfig: USER:PASSWORD of a user of --registry, for the pull secrets of scenarios with registry.auth")
	fl.StringVar(&f.existing.registryMetrics, "registry-metrics", "", "with --kubeconfig: where --registry serves its request counters (fakeregistry serve --metrics-addr: HOST:PORT or unix:PATH), to count its requests per image over the main pass")
	fl.StringVar(&f.out, "out", "reports", "directory for reports (a <scenario>/ subdirectory is used)")
	fl.BoolVar(&f.baseline, "baseline", false, "add a baseline pass without the operator even if the scenario has none")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the summary (and no progress unless --progress says so)")
	fl.StringVar(&f.progress, "progress", cmp.Or(os.Getenv(compare.ProgressEnv), progressAuto),
		"pass progress: auto (a live line on a terminal, else a line every 10 s on stderr; none with --quiet), live, lines or none; default from $"+compare.ProgressEnv)
	fl.StringVar(&f.logFile, "log", "", "write the components' logs (scheduler, operator, clients) to this file")
	fl.IntVar(&f.logVerbosity, "v", 0, "log verbosity for --log")
	fl.StringVar(&f.archgate, "archgate", defaultArchgate, "the archgate binary whose webhook and controller processes the scenario runs (make archgate builds it)")
	fl.StringVar(&f.kcm, "kube-controller-manager", defaultControllerManager, "the kube-controller-manager binary of scenarios with controlPlane.controllerManager (make cluster-components builds it)")
	fl.BoolVar(&f.inProcess, "in-process", false, "run the scheduler, webhook and controller inside the simulator's process (debugging, scenarios with operator.mode direct; no per-component cost)")
	fl.BoolVar(&f.profile, "profile", false, "write CPU and heap profiles of kube-apiserver and each component, and kube-apiserver's allocations, beside the report")
	fl.DurationVar(&f.profileTime, "profile-duration", 30*time.Second, "how much of each pass the CPU profiles cover, from its start")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// runScenario loads the scenario, runs it and writes and prints its report: the command's
// wiring (logs, signals, guard, options, report files, exit codes) in the order it happens.
func runScenario(parent context.Context, f runFlags) error {
	loaded, err := loadScenario(f)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	logger, closeLog, err := runLogger(f)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer closeLog()
	ctrllog.SetLogger(logger)

	guard, err := procs.StartGuard()
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: %v; a crash could leave kube-apiserver/etcd running\n", err)
	}
	defer guard.Close()

	// First SIGINT/SIGTERM: cancel and shut down cleanly (the report of what
	// ran is still written). Second: kill the control plane and exit now.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	interrupted := watchInterrupts(sigs, cancel, func() {
		guard.KillNow()
		os.Exit(exitInterrupted)
	})

	opts, err := f.runOptions(loaded, logger, guard)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	rep, runErr := runner.Run(ctx, opts)
	runErr = errors.Join(runErr, writeReport(rep, f.out))
	return verdict(rep, runErr, interrupted.Load())
}

// loadScenario reads the scenario file and any expectations file the flags name.
func loadScenario(f runFlags) (*scenario.Loaded, error) {
	loaded, err := scenario.Load(f.scenario)
	if err != nil {
		return nil, err
	}
	if f.expectations != "" {
		if err := loaded.LoadExpectations(f.expectations); err != nil {
			return nil, err
		}
	}
	return loaded, nil
}

// runLogger is the components' logger: the log file the flags name, or none. Call the
// returned function when the run is over.
func runLogger(f runFlags) (logr.Logger, func(), error) {
	if f.logFile == "" {
		return logr.Discard(), func() {}, nil
	}
	lf, err := os.Create(f.logFile)
	if err != nil {
		return logr.Logger{}, nil, err
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(lf), textlogger.Verbosity(f.logVerbosity)))
	return logger, func() { lf.Close() }, nil
}

// runOptions are the runner's options from the flags.
func (f runFlags) runOptions(loaded *scenario.Loaded, logger logr.Logger, guard *procs.Guard) (runner.Options, error) {
	var status io.Writer
	if !f.quiet {
		status = os.Stderr
	}
	progress, live, err := progressOutput(f.progress, f.quiet, term.IsTerminal(int(os.Stdout.Fd())))
	if err != nil {
		return runner.Options{}, err
	}
	opts := runner.Options{
		Scenario:     loaded,
		Kubeconfig:   f.kubeconfig,
		Baseline:     f.baseline,
		Status:       status,
		Progress:     progress,
		ProgressLive: live,
		Logger:       logger,
		Guard:        guard,
	}
	if f.kcm != "" {
		if opts.ControllerManager, err = filepath.Abs(f.kcm); err != nil {
			return opts, err
		}
	}
	if f.kubeconfig != "" {
		opts.Existing, err = f.existing.options()
		return opts, err
	}
	return opts, f.components(&opts, loaded.Scenario.Name)
}

// writeReport writes the report's files under dir and prints its summary, when a main pass
// ran.
func writeReport(rep *report.Report, dir string) error {
	if rep == nil || rep.Main == nil {
		return nil
	}
	files, err := rep.Write(dir)
	rep.WriteText(os.Stdout)
	if files.JSON != "" {
		fmt.Fprintf(os.Stdout, "report: %s\nsummary: %s\n", files.JSON, files.Markdown)
	}
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// verdict is the command's exit: interrupted, failed to run, not judged, failed, or passed.
func verdict(rep *report.Report, runErr error, interrupted bool) error {
	switch {
	case interrupted:
		return &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	case runErr != nil:
		return &exitError{code: exitFailed, err: runErr}
	case rep.NotJudged:
		return &exitError{code: exitNotJudged, err: fmt.Errorf("scenario %s: not judged, the machine was saturated or unsteady: %s", rep.Scenario.Name, strings.Join(rep.Failures, "; "))}
	case !rep.Passed:
		return &exitError{code: exitFailed, err: fmt.Errorf("scenario %s failed: %s", rep.Scenario.Name, strings.Join(rep.Failures, "; "))}
	}
	return nil
}

// watchInterrupts cancels the run on the first signal and calls killNow on
// the second. The returned flag says whether a signal came; it is read by
// the command's goroutine while this one sets it, hence atomic.
func watchInterrupts(sigs <-chan os.Signal, cancel context.CancelFunc, killNow func()) *atomic.Bool {
	var interrupted atomic.Bool
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		interrupted.Store(true)
		fmt.Fprintln(os.Stderr, "\ninterrupted: stopping (again to kill at once)")
		cancel()
		if _, ok := <-sigs; ok {
			killNow()
		}
	}()
	return &interrupted
}

// components sets how the scheduler and the operator run: as processes
// (the archgate binary, the simulator's own scheduler command) unless
// --in-process; and where profiles go.
func (f runFlags) components(o *runner.Options, scenarioName string) error {
	if f.profile {
		o.ProfileDir = filepath.Join(f.out, scenarioName, "profiles-"+time.Now().UTC().Format("20060102T150405Z"))
		o.ProfileDuration = f.profileTime
	}
	if f.inProcess {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the simulator's executable for the scheduler process: %w", err)
	}
	o.SchedulerCommand = []string{self}
	bin, err := filepath.Abs(f.archgate)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		if f.archgate != defaultArchgate {
			return fmt.Errorf("--archgate %s: %w (build it with make archgate, or pass --in-process)", f.archgate, err)
		}
		// compare runs older checkouts whose Makefile did not build it.
		build := exec.Command("go", "build", "-o", bin, "./operator/cmd/archgate")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building %s: %w (run from the repository root, or pass --archgate)", f.archgate, err)
		}
	}
	o.Archgate = bin
	return nil
}

func newValidateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files strictly (fields, values, expectations) without running them",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			for _, a := range args {
				l, err := scenario.Load(a)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s: %d pods, %d nodes, %d images, %d expectations)\n", a,
					l.Scenario.Name, l.Scenario.Workload.Pods, nodeCount(l.Scenario), len(l.Catalog.Images()), len(l.Checks))
			}
			if len(errs) > 0 {
				return &exitError{code: exitUsage, err: errors.Join(errs...)}
			}
			return nil
		},
	}
}

func nodeCount(s *scenario.Scenario) int {
	n := 0
	for _, p := range s.Nodes {
		n += p.Count
	}
	return n
}

// options reads the files the flags name.
func (f existingFlags) options() (runner.ExistingOptions, error) {
	o := runner.ExistingOptions{Image: f.image, Registry: f.registry, RegistryMetrics: f.registryMetrics}
	if f.registryCA != "" {
		ca, err := os.ReadFile(f.registryCA)
		if err != nil {
			return o, fmt.Errorf("--registry-ca: %w", err)
		}
		o.RegistryCA = ca
	}
	if f.registryAuth != "" {
		user, password, ok := strings.Cut(f.registryAuth, ":")
		if !ok || user == "" || password == "" {
			return o, fmt.Errorf("--registry-auth: want USER:PASSWORD, got %q", f.registryAuth)
		}
		o.RegistryUser, o.RegistryPassword = user, password
	}
	return o, nil
}

// Values of --progress.
const (
	progressAuto  = "auto"
	progressLive  = "live"
	progressLines = "lines"
	progressNone  = "none"
)

// progressOutput is where a run reports its passes' progress, and whether as a live line:
// a live line on stdout when it is a terminal, otherwise plain lines on stderr (CI logs, tee,
// the runs of repeat and compare); nothing with --quiet unless --progress asks for it.
func progressOutput(mode string, quiet, terminal bool) (io.Writer, bool, error) {
	switch mode {
	case progressAuto:
		switch {
		case quiet:
			return nil, false, nil
		case terminal:
			return os.Stdout, true, nil
		}
		return os.Stderr, false, nil
	case progressLive:
		return os.Stdout, true, nil
	case progressLines:
		return os.Stderr, false, nil
	case progressNone:
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("--progress %q: want %s, %s, %s or %s", mode, progressAuto, progressLive, progressLines, progressNone)
}
