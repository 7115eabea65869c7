// Package runner executes a scenario on a cluster (cluster: simulatedCluster, which starts
// envtest, the scheduler, fake nodes and the fake registry; or existingCluster, the cluster of
// --kubeconfig), runs the passes without archgate, starts archgate's components (components:
// renderedComponents, directComponents or installedComponents), runs the main pass with its
// timeline, measures and builds the report.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// Options configure a run.
type Options struct {
	// Scenario is the loaded scenario.
	Scenario *scenario.Loaded
	// Kubeconfig runs against an existing cluster instead of envtest (see ExistingOptions).
	Kubeconfig string
	// Existing configures a run against an existing cluster.
	Existing ExistingOptions
	// Baseline forces a baseline pass even if the scenario does not ask.
	Baseline bool
	// RepoRoot is the repository root (CRDs, git state); found from the
	// working directory when empty.
	RepoRoot string
	// Status receives phase messages; nil discards them.
	Status io.Writer
	// Progress receives the pass's progress: one redrawn line when
	// ProgressLive (a terminal), else a line every 10 s; nil disables it.
	Progress     io.Writer
	ProgressLive bool
	// Logger receives the components' logs (scheduler, operator); the zero
	// value discards them.
	Logger logr.Logger
	// Guard kills the control-plane processes if the simulator dies; nil
	// runs without one.
	Guard *procs.Guard
	// Archgate is the archgate binary: set, the webhook and the placement
	// controller run as its processes (as in a cluster, each with its own CPU
	// and memory account); empty, in the simulator's process (debugging).
	Archgate string
	// SchedulerCommand runs the scheduler as a process: the program (and
	// leading arguments) that provides the simulator's `scheduler` command,
	// normally the simulator's own executable. Nil embeds it in-process.
	SchedulerCommand []string
	// ControllerManager is the kube-controller-manager binary a scenario with
	// controlPlane.controllerManager runs (make cluster-components builds it).
	ControllerManager string
	// ProfileDir, when set, receives CPU profiles of kube-apiserver and of
	// each component process over the first ProfileDuration (default 30s) of
	// each pass, and their heap profiles at the pass's end.
	ProfileDir      string
	ProfileDuration time.Duration
}

// Run executes the scenario and returns its report. The report is returned
// (with Errors set) even when the run failed part-way, if measurements were
// taken; the error says what stopped the run.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	start := time.Now()
	s := o.Scenario.Scenario
	if o.Baseline {
		s.Baseline = true
	}
	if o.RepoRoot == "" {
		root, err := testenv.RepositoryRoot()
		if err != nil {
			return nil, err
		}
		o.RepoRoot = root
	}
	if o.Status == nil {
		o.Status = io.Discard
	}
	r := &run{opts: o, s: s, id: runID(), plan: workload.Generate(s, o.Scenario.Catalog)}
	env := environment(ctx, o.RepoRoot)
	defer r.cleanups.run()
	setKlog(o.Logger)
	r.sampler = procs.StartSampler(ctx, time.Second)
	r.cleanups.add(r.sampler.Stop)
	r.cluster = r.newCluster()
	r.cleanups.add(r.cluster.stop)
	res, err := r.execute(ctx)
	if err != nil {
		res.errors = append(res.errors, err.Error())
	}
	if r.kube != nil {
		env.ControlPlane, env.KubernetesVersion = r.kube.controlPlane, r.kube.version
	}
	r.sampler.Sample()
	env.LoadAverage = r.sampler.MaxLoad()
	_, env.ForeignCPUShare = r.sampler.ForeignCPU()
	rep := assemble(assembly{
		scenario: report.ScenarioInfo{Name: s.Name, Description: s.Description, File: o.Scenario.File,
			SHA256: o.Scenario.SHA256, Spec: s},
		env:       env,
		start:     start,
		resources: r.resources(),
		results:   res,
		checks:    o.Scenario.Checks,
		risk:      workload.BaselineRisk(r.plan.Pods, nodesByArch(s)),
	})
	rep.Cluster = r.cluster.block(env.KubernetesVersion)
	return rep, err
}

// run is what every phase of one run needs: the options, the scenario and its plan, the
// cluster with its clients and nodes, archgate's components, the sampler and the cleanups
// (run in reverse order). Phases return what they produce (passResult, results) and
// assemble builds the report from it.
type run struct {
	opts Options
	s    *scenario.Scenario
	// id names the run's namespaces and nodes.
	id      string
	plan    workload.Plan
	cluster cluster
	// kube and nodes (each node's "os/arch") are what the cluster's start returned.
	kube  *kube
	nodes map[string]string
	// comps are archgate's components: noComponents until they start.
	comps    components
	sampler  *procs.Sampler
	cleanups cleanups
}

// newCluster is the cluster the options name: the one of Options.Kubeconfig, else a simulated one.
func (r *run) newCluster() cluster {
	if r.opts.Kubeconfig != "" {
		return &existingCluster{opts: r.opts, s: r.s, id: r.id, sampler: r.sampler, logf: statusf(r.opts.Status)}
	}
	return &simulatedCluster{opts: r.opts, s: r.s, id: r.id, sampler: r.sampler, logf: statusf(r.opts.Status)}
}

func (r *run) logf(format string, args ...any) { statusf(r.opts.Status)(format, args...) }

// statusf prints phase messages to w, a line each.
func statusf(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

// results are what the phases produced, for assemble.
type results struct {
	main, baseline, handwritten, floor *passResult
	operator                           *report.OperatorStats
	registry                           *report.RegistryStats
	errors                             []string
}

// execute runs the phases on the run's cluster and returns what they produced, also when one
// failed part-way: the cluster, the passes without archgate, archgate's components, the main
// pass and its counts.
func (r *run) execute(ctx context.Context) (results, error) {
	var res results
	r.comps = noComponents{}
	kube, nodes, err := r.cluster.start(ctx)
	r.kube, r.nodes = kube, nodes
	if err != nil {
		return res, err
	}
	if err := r.runOperatorOffPasses(ctx, &res); err != nil {
		return res, err
	}
	// Creating a thousand nodes or deleting a pass's pods keeps the
	// apiserver, etcd and the scheduler busy for tens of seconds after the
	// requests returned (watch fan-out, compaction); a pass started then
	// measures that, not itself.
	if err := r.cluster.settle(ctx); err != nil {
		return res, err
	}
	if r.s.Operator.Enabled {
		comps, err := r.cluster.startArchgate(ctx, r.probe())
		if err != nil {
			return res, err
		}
		r.comps = comps
		// The components' start-up (cache syncs of every replica) is not the pass's cost.
		if err := r.cluster.settle(ctx); err != nil {
			return res, err
		}
	}
	p, err := r.runPass(ctx, passSpec{name: "main", operator: r.s.Operator.Enabled, timeline: r.s.Timeline,
		attacker: r.s.Attacker != nil, count: true})
	res.main = &p
	if err != nil {
		return res, fmt.Errorf("main pass: %w", err)
	}
	r.logf("main pass: %d/%d pods bound in %.1fs (%.1f pods/s)", p.pass.BoundPods, p.pass.Pods, p.pass.DurationSeconds, p.pass.Throughput)
	var statsErr error
	res.operator, statsErr = p.counts.components()
	if err := errors.Join(statsErr, r.comps.err()); err != nil {
		res.errors = append(res.errors, err.Error())
	}
	if res.registry, err = p.counts.registry(ctx, r.plan.Pods); err != nil {
		res.errors = append(res.errors, err.Error())
	}
	return res, nil
}

// counts count the components' metrics and the registry's requests over a pass.
type counts struct {
	components componentCount
	registry   registryCount
}

// startCounts starts counting.
func (r *run) startCounts(ctx context.Context) (counts, error) {
	reg, err := r.cluster.countRegistry(ctx)
	return counts{components: r.comps.count(), registry: reg}, err
}

// runOperatorOffPasses runs the baseline, handwritten and floor passes the scenario asks for
// into res.
func (r *run) runOperatorOffPasses(ctx context.Context, res *results) error {
	for _, spec := range []struct {
		want bool
		pass passSpec
		into **passResult
	}{
		// Under the same attack as the main pass: what the attack costs the cluster without
		// archgate is the part of the main pass's figures archgate cannot be asked to remove.
		{r.s.Baseline, passSpec{name: "baseline", attacker: r.s.Attacker != nil}, &res.baseline},
		{r.s.HandwrittenBaseline, passSpec{name: "handwritten", handwritten: true, floor: r.s.HandwrittenFloor(), attacker: r.s.Attacker != nil}, &res.handwritten},
		{r.s.FloorBaseline != scenario.FloorNone, passSpec{name: "floor", handwritten: true, floor: r.s.FloorBaseline, gate: r.s.FloorGate, attacker: r.s.Attacker != nil}, &res.floor},
	} {
		if !spec.want {
			continue
		}
		p, err := r.runOperatorOffPass(ctx, spec.pass)
		*spec.into = &p
		if err != nil {
			return err
		}
	}
	return nil
}

// runOperatorOffPass runs a pass without the operator once the cluster has
// settled, and deletes its pods.
func (r *run) runOperatorOffPass(ctx context.Context, spec passSpec) (passResult, error) {
	if err := r.cluster.settle(ctx); err != nil {
		return passResult{}, err
	}
	if start, ok := r.floor(spec); ok {
		stop, err := start(ctx)
		if err != nil {
			return passResult{}, fmt.Errorf("%s pass: %w", spec.name, err)
		}
		defer func() {
			if err := stop(context.WithoutCancel(ctx)); err != nil {
				r.logf("stopping the %s pass's floor: %v", spec.name, err)
			}
		}()
	}
	p, err := r.runPass(ctx, spec)
	if err != nil {
		return p, fmt.Errorf("%s pass: %w", spec.name, err)
	}
	r.logf("%s pass: %d/%d pods bound in %.1fs (%.1f pods/s)", spec.name, p.pass.BoundPods, p.pass.Pods, p.pass.DurationSeconds, p.pass.Throughput)
	return p, r.deletePassPods(ctx, spec.name)
}

// floor is what starts the pass's floor, the admission that adds the handwritten affinity,
// if it has one.
func (r *run) floor(spec passSpec) (start func(context.Context) (stop func(context.Context) error, err error), ok bool) {
	switch spec.floor {
	case scenario.FloorWebhook:
		return r.startFloorWebhook, true
	case scenario.FloorPolicy, scenario.FloorPolicyPlacement:
		return func(ctx context.Context) (func(context.Context) error, error) {
			return r.startFloorPolicy(ctx, spec.floor == scenario.FloorPolicyPlacement)
		}, true
	}
	return nil, false
}

// assembly is everything the report is built from.
type assembly struct {
	scenario  report.ScenarioInfo
	env       report.Environment
	start     time.Time
	resources report.Resources
	results   results
	checks    []scenario.Check
	risk      workload.MisplacementRisk
}

// assemble builds the report in one place and judges it: passes, timeline,
// ratios, the oracle's self-check, expectations, verdict.
func assemble(a assembly) *report.Report {
	res := a.results
	rep := &report.Report{
		SchemaVersion: report.SchemaVersion,
		Scenario:      a.scenario,
		Environment:   a.env,
		StartedAt:     a.start.UTC().Truncate(time.Second),
		WallSeconds:   time.Since(a.start).Seconds(),
		Operator:      res.operator,
		Registry:      res.registry,
		Resources:     a.resources,
	}
	for _, p := range []*passResult{res.baseline, res.handwritten, res.floor, res.main} {
		if p == nil {
			continue
		}
		rep.Timeline = append(rep.Timeline, p.timeline...)
		rep.Errors = append(rep.Errors, p.errors...)
	}
	rep.Errors = append(rep.Errors, res.errors...)
	if res.baseline != nil && res.baseline.pass != nil {
		rep.Baseline = res.baseline.pass
		rep.Oracle = &report.Oracle{AtRiskPods: a.risk.AtRiskPods, ExpectedMisplaced: a.risk.Expected,
			BaselineMisplaced: rep.Baseline.MisplacedPods}
	}
	if res.handwritten != nil {
		rep.Handwritten = res.handwritten.pass
	}
	if res.floor != nil {
		rep.Floor = res.floor.pass
	}
	if res.main != nil {
		rep.Main = res.main.pass
	}
	if rep.Main != nil {
		if rep.Baseline != nil {
			rep.Ratios = ratios(rep.Main, rep.Baseline)
		}
		if rep.Handwritten != nil {
			rep.HandwrittenRatios = ratios(rep.Main, rep.Handwritten)
		}
		if rep.Floor != nil {
			rep.FloorRatios = ratios(rep.Main, rep.Floor)
		}
		rep.Expectations = report.Evaluate(rep, a.checks)
	}
	rep.Judge()
	return rep
}

// nodesByArch counts the scenario's nodes per architecture.
func nodesByArch(s *scenario.Scenario) map[string]int {
	out := map[string]int{}
	for _, p := range s.Nodes {
		out[p.Arch] += p.Count
	}
	return out
}

// ratios divides main-pass figures by those of a pass without the operator.
func ratios(m, b *report.Pass) map[string]float64 {
	out := map[string]float64{}
	div := func(name string, x, y float64) {
		if y > 0 && x == x {
			out[name] = x / y
		}
	}
	div("throughput", m.Throughput, b.Throughput)
	if m.CalibrationSeconds > 0 {
		div("calibration", m.CalibrationSeconds, b.CalibrationSeconds)
	}
	for _, fam := range []string{"schedule", "total", "create"} {
		ms, bs := m.Latency[fam], b.Latency[fam]
		if ms.N > 0 && bs.N > 0 {
			div(fam+".p50", ms.P50, bs.P50)
			div(fam+".p99", ms.P99, bs.P99)
		}
	}
	for _, fam := range []string{"schedule", "create"} {
		for window, lat := range map[string][2]map[string]stats.Summary{"start.": {m.StartLatency, b.StartLatency}, "rest.": {m.RestLatency, b.RestLatency}} {
			if ms, bs := lat[0][fam], lat[1][fam]; ms.N > 0 && bs.N > 0 {
				div(window+fam+".p99", ms.P99, bs.P99)
			}
		}
	}
	for _, fam := range scenario.WindowFamilies {
		mt, mok := m.TypicalWindowP99(fam)
		bt, bok := b.TypicalWindowP99(fam)
		if mok && bok {
			div("typicalWindow."+fam+".p99", mt, bt)
		}
	}
	if m.APIServerRuntime != nil && b.APIServerRuntime != nil {
		div("apiserver.allocatedPerPod", m.APIServerRuntime.AllocatedBytesPerPod, b.APIServerRuntime.AllocatedBytesPerPod)
	}
	if m.Cost != nil && b.Cost != nil {
		div("cost.cpuPer1kPods", m.Cost.CPUSecondsPer1kPods, b.Cost.CPUSecondsPer1kPods)
		div("cost.relativeCPU", m.Cost.RelativeCPU(), b.Cost.RelativeCPU())
		div("cost.apiWritesPerPod", m.Cost.APIWritesPerPod, b.Cost.APIWritesPerPod)
		for _, c := range m.Cost.Components {
			if bc, ok := b.Cost.Component(c.Name); ok {
				div("cost.cpuPer1kPods."+c.Name, c.CPUSecondsPer1kPods, bc.CPUSecondsPer1kPods)
			}
		}
	}
	return out
}

// resources turns the sampler's readings into the report's.
func (r *run) resources() report.Resources {
	var res report.Resources
	s := r.sampler
	last := s.Last()
	names := slices.Collect(maps.Keys(last))
	slices.SortFunc(names, report.CompareComponents)
	for _, name := range names {
		p := last[name]
		ps := report.ProcessStats{Name: r.componentName(name), CPUSeconds: p.CPU.Seconds(), PeakRSSBytes: p.PeakRSS}
		if name == procs.SelfName {
			cpu, peak := procs.Self()
			ps.CPUSeconds, ps.PeakRSSBytes = cpu.Seconds(), max(peak, p.PeakRSS)
		}
		res.Processes = append(res.Processes, ps)
	}
	for _, smp := range s.Samples() {
		rs := report.ResourceSample{At: smp.At.Seconds(), CPUSeconds: map[string]float64{}, RSSBytes: smp.RSS}
		for k, v := range smp.CPU {
			rs.CPUSeconds[k] = v.Seconds()
		}
		res.Samples = append(res.Samples, rs)
	}
	return res
}

// setKlog sends the embedded components' klog and controller-runtime
// output to the logger.
func setKlog(l logr.Logger) {
	if l.GetSink() == nil {
		l = logr.Discard()
	}
	klog.SetLogger(l)
	ctrllog.SetLogger(l)
}

// runID is a short random id that names the run's namespaces and nodes.
func runID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// goVersion is the toolchain that built the simulator.
func goVersion() string { return strings.TrimPrefix(runtime.Version(), "go") }
