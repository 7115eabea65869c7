// Package runner executes a scenario: it starts the control plane (envtest
// or an existing cluster), the embedded kube-scheduler, the node pools, the
// fake registry and the operator in-process, then runs the workload (and an
// optional baseline pass without the operator), applies the timeline,
// measures and builds the report.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
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
	r := &run{opts: o, s: s, id: runID()}
	r.plan = workload.Generate(s, o.Scenario.Catalog)
	r.env = environment(ctx, o.RepoRoot)
	defer r.cleanup()
	execute := r.execute
	if o.Kubeconfig != "" {
		r.ext = &existingEnv{opts: o.Existing}
		execute = r.executeExisting
	}
	res, err := execute(ctx)
	if err != nil {
		res.errors = append(res.errors, err.Error())
	}
	r.finishSampling()
	rep := assemble(assembly{
		scenario: report.ScenarioInfo{Name: s.Name, Description: s.Description, File: o.Scenario.File,
			SHA256: o.Scenario.SHA256, Spec: s},
		env:       r.env,
		start:     start,
		resources: r.resources(),
		results:   res,
		checks:    o.Scenario.Checks,
		risk:      workload.BaselineRisk(r.plan.Pods, nodesByArch(s)),
	})
	rep.Cluster = r.clusterBlock()
	return rep, err
}

// run is the state of one run: what the phases set up (control plane,
// nodes, operator) and their cleanups, which run in reverse order. Passes do
// not change it: they return their results (passResult) and assemble builds
// the report from them.
type run struct {
	opts         Options
	s            *scenario.Scenario
	id           string
	plan         workload.Plan
	env          report.Environment
	cfg          *rest.Config
	client       kubernetes.Interface
	nodePlatform map[string]string
	sampler      *procs.Sampler
	op           *operatorEnv
	// ext is set for a run against an existing cluster (Options.Kubeconfig).
	ext *existingEnv
	tmp string
	// schedFamilies reads the scheduler's metrics; profiled lists the
	// processes started besides the operator's.
	schedFamilies func(context.Context) ([]*dto.MetricFamily, error)
	profiled      []*operand.Process
	cleanups      []func()
}

func (r *run) defer_(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *run) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Status, format+"\n", args...)
}

// results are what the phases produced, for assemble.
type results struct {
	main, baseline, handwritten *passResult
	operator                    *report.OperatorStats
	registry                    *report.RegistryStats
	errors                      []string
}

// execute runs the phases and returns what they produced, also when one
// failed part-way.
func (r *run) execute(ctx context.Context) (results, error) {
	var res results
	setKlog(r.opts.Logger)
	r.sampler = procs.StartSampler(ctx, time.Second)
	r.defer_(r.sampler.Stop)
	tmp, err := os.MkdirTemp("", "archgate-sim-")
	if err != nil {
		return res, err
	}
	r.tmp = tmp
	r.defer_(func() { os.RemoveAll(tmp) })
	if err := r.startCluster(ctx); err != nil {
		return res, err
	}
	if err := r.runOperatorOffPasses(ctx, &res); err != nil {
		return res, err
	}
	// Creating a thousand nodes or deleting a pass's pods keeps the
	// apiserver, etcd and the scheduler busy for tens of seconds after the
	// requests returned (watch fan-out, compaction); a pass started then
	// measures that, not itself.
	if err := r.settle(ctx); err != nil {
		return res, err
	}
	if r.s.Operator.Enabled {
		t := time.Now()
		if err := r.startOperator(ctx); err != nil {
			return res, err
		}
		r.logf("registry (%d images) and operator ready in %.1fs", len(r.opts.Scenario.Catalog.Images()), time.Since(t).Seconds())
		// The components' start-up (cache syncs of every replica) is not the pass's cost.
		if err := r.settle(ctx); err != nil {
			return res, err
		}
	}
	p, err := r.runPass(ctx, passSpec{name: "main", operator: r.s.Operator.Enabled, timeline: r.s.Timeline, attacker: r.s.Attacker != nil})
	res.main = &p
	if err != nil {
		return res, fmt.Errorf("main pass: %w", err)
	}
	r.logf("main pass: %d/%d pods bound in %.1fs (%.1f pods/s)", p.pass.BoundPods, p.pass.Pods, p.pass.DurationSeconds, p.pass.Throughput)
	if r.op != nil {
		var statsErr error
		res.operator, res.registry, statsErr = r.op.stats(r.plan.Pods)
		if err := errors.Join(statsErr, r.op.err()); err != nil {
			res.errors = append(res.errors, err.Error())
		}
	}
	return res, nil
}

// runOperatorOffPasses runs the baseline and handwritten passes the scenario asks for.
func (r *run) runOperatorOffPasses(ctx context.Context, res *results) error {
	for _, spec := range []struct {
		want bool
		pass passSpec
		into **passResult
	}{
		// Under the same attack as the main pass: what the attack costs the cluster without
		// archgate is the part of the main pass's figures archgate cannot be asked to remove.
		{r.s.Baseline, passSpec{name: "baseline", attacker: r.s.Attacker != nil}, &res.baseline},
		{r.s.HandwrittenBaseline, passSpec{name: "handwritten", handwritten: true, attacker: r.s.Attacker != nil}, &res.handwritten},
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
	if err := r.settle(ctx); err != nil {
		return passResult{}, err
	}
	if spec.handwritten && r.s.HandwrittenViaWebhook {
		stop, err := r.startFloorWebhook(ctx)
		if err != nil {
			return passResult{}, fmt.Errorf("%s pass: %w", spec.name, err)
		}
		defer func() {
			if err := stop(context.WithoutCancel(ctx)); err != nil {
				r.logf("stopping the floor webhook: %v", err)
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

// startCluster starts the control plane, the scheduler and the nodes.
func (r *run) startCluster(ctx context.Context) error {
	t := time.Now()
	if err := r.startControlPlane(ctx); err != nil {
		return err
	}
	if err := r.startBackground(ctx); err != nil {
		return err
	}
	r.logf("control plane ready in %.1fs (%s, Kubernetes %s)", time.Since(t).Seconds(), r.env.ControlPlane, r.env.KubernetesVersion)
	t = time.Now()
	if err := r.startScheduler(ctx); err != nil {
		return err
	}
	if err := r.createNodes(ctx); err != nil {
		return err
	}
	r.logf("scheduler started, %d nodes created in %.1fs", len(r.nodePlatform), time.Since(t).Seconds())
	return nil
}

// finishSampling takes the last resource reading and the machine's load
// into the environment.
func (r *run) finishSampling() {
	if r.sampler == nil {
		return
	}
	r.sampler.Sample()
	r.env.LoadAverage = r.sampler.MaxLoad()
	_, r.env.ForeignCPUShare = r.sampler.ForeignCPU()
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
	for _, p := range []*passResult{res.baseline, res.handwritten, res.main} {
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
	if m.Cost != nil && b.Cost != nil {
		div("cost.cpuPer1kPods", m.Cost.CPUSecondsPer1kPods, b.Cost.CPUSecondsPer1kPods)
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
	if s == nil {
		return res
	}
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

// nodePool is the run's pool of nodes for the scenario's pool p.
func (r *run) nodePool(p scenario.NodePoolSpec) fakenodes.NodePool {
	pool := fakenodes.DefaultPool("sim-"+r.id+"-"+p.Name, p.Arch, p.Count)
	pool.OS = p.OS
	pool.CPU, pool.Memory, pool.Pods = *p.Allocatable.CPU, *p.Allocatable.Memory, p.Allocatable.Pods
	pool.Taints = p.Taints
	return pool
}

// createNodes creates the scenario's node pools.
func (r *run) createNodes(ctx context.Context) error {
	var pools []fakenodes.NodePool
	r.nodePlatform = map[string]string{}
	for _, p := range r.s.Nodes {
		pool := r.nodePool(p)
		pools = append(pools, pool)
		for i := range p.Count {
			r.nodePlatform[pool.Node(i).Name] = p.OS + "/" + p.Arch
		}
	}
	if err := fakenodes.CreateNodes(ctx, r.client, pools, 50); err != nil {
		return err
	}
	// The scheduler learns about nodes from its informer; a pod tried
	// before that is requeued on the node's add event, so this only avoids
	// a needless first failure.
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
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
