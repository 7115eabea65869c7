package report

import (
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// sample builds a full report whose latencies are scale times a fixed
// random sample.
func sample(scale float64) *Report {
	rng := rand.New(rand.NewPCG(1, 2))
	// gated: the pass's pods held a gate (the operator's, or the floor's with floorGate).
	pass := func(name string, operator, gated bool) *Pass {
		p := &Pass{Name: name, Operator: operator, Pods: 1000, BoundPods: 1000, Latency: map[string]stats.Summary{},
			Throughput: 100 / scale, DurationSeconds: 10, Placements: map[string]int{"arch-set": 1000}}
		for range 1000 {
			p.Samples.Schedule = append(p.Samples.Schedule, int64(scale*float64(5000+rng.IntN(20000))))
			p.Samples.Total = append(p.Samples.Total, int64(scale*float64(20000+rng.IntN(40000))))
			p.Samples.Create = append(p.Samples.Create, int64(scale*float64(2000+rng.IntN(4000))))
			if gated {
				p.Samples.GateHold = append(p.Samples.GateHold, int64(scale*float64(5000+rng.IntN(10000))))
			}
		}
		for _, fam := range []string{"gateHold", "schedule", "total", "create"} {
			if xs := p.Samples.Seconds(fam); len(xs) > 0 {
				p.Latency[fam] = stats.Summarize(xs)
			}
		}
		p.StartLatency, p.RestLatency = maps.Clone(p.Latency), maps.Clone(p.Latency)
		p.WindowP99 = map[string]stats.Summary{"create": stats.Summarize([]float64{0.004, 0.005, 0.006}), "schedule": stats.Summarize([]float64{0.01, 0.02})}
		for range 10 {
			p.PerSecond.Bound = append(p.PerSecond.Bound, int(100/scale)+rng.IntN(3))
			p.PerSecond.Created = append(p.PerSecond.Created, 100)
			p.PerSecond.Ungated = append(p.PerSecond.Ungated, 100)
		}
		p.ExecFormat = &ExecFormat{ReportedPods: 10, DetectedPods: 10, Monitor: operator}
		p.Trace = []PodTrace{{Sent: 0, Created: 4000, Seen: 4500, Gated: -1, Ungated: -1, Bound: 20000}}
		if operator {
			p.Attacker = &Attacker{Planned: map[string]int{"hang": 2}, Pods: 2, BoundPods: 2, GateHoldMaxSeconds: 60, MaxGateAgeSeconds: 60}
		}
		if operator {
			p.Latency["execFormatDetection"] = stats.Summarize([]float64{0.05, 0.1, 0.2})
		}
		p.SchedulerSLI = &HistogramStats{Count: 1000, P50: 0.01, P99: 0.05}
		p.APIServerRuntime = &APIServerRuntime{LiveHeapBytesAtStart: 200 << 20, AllocatedBytesPerPod: 300 << 10 * scale, GCCycles: 3, GCCPUSecondsPer1kPods: 0.5 * scale}
		p.Steps = []StepStats{{Rate: 50, Pods: 500, TotalP50: 0.02, TotalP99: 0.1, Sustained: true}, {Rate: 100, StartSeconds: 10, Pods: 500, TotalP50: 2, TotalP99: 3}}
		p.SustainedRate = 50 / scale
		p.CalibrationSeconds = 12e-6 * scale
		p.Cost = &Cost{Pods: 1000, CPUSecondsPer1kPods: 10 * scale, Utilization: 0.4 * scale, APIRequestsPerPod: 4, APIWritesPerPod: 3 + scale/4,
			APIRequests: []APIRequestCount{{Verb: "POST", Resource: "pods", Count: 1000, PerPod: 1}}}
		for _, c := range scenario.CostComponents {
			p.Cost.Components = append(p.Cost.Components, ComponentCost{Name: c, CPUSeconds: scale, CPUSecondsPer1kPods: scale, PeakRSSBytes: 1 << 20, PeakReplicaRSSBytes: 1 << 19})
		}
		return p
	}
	r := &Report{
		SchemaVersion: SchemaVersion,
		Scenario:      ScenarioInfo{Name: "t", SHA256: "x"},
		Environment:   Environment{Commit: "0123456789abcdef", Tree: "tree"},
		StartedAt:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		WallSeconds:   30,
		Main:          pass("main", true, true),
		Baseline:      pass("baseline", false, false),
		Ratios: map[string]float64{"throughput": 0.9, "schedule.p50": 1.1, "schedule.p99": 1.2, "total.p50": 1.3, "total.p99": 1.4,
			"create.p99": 2, "start.schedule.p99": 1.5, "rest.schedule.p99": 1.1, "start.create.p99": 2.1, "rest.create.p99": 1.9,
			"typicalWindow.schedule.p99": 1.05, "typicalWindow.create.p99": 1.3,
			"cost.cpuPer1kPods": 2, "cost.relativeCPU": 1.2, "cost.apiWritesPerPod": 1.33, "apiserver.allocatedPerPod": 1.2, "calibration": 1},
		Operator: &OperatorStats{CacheHits: 99, CacheMisses: 1, CacheHitRate: 0.99, InspectionErrors: map[string]float64{"auth": 0},
			PhaseMeanSeconds: map[string]float64{"patch": 0.011, "placement": 0.0001, "inspection": 0.007, "config": 0.00005}, Reconciles: 129,
			Restarts: map[string]int{}, OOMKills: map[string]int{}},
		Registry:  &RegistryStats{Requests: map[string]uint64{"ping": 1, "manifest_get": 2}, Total: 3, UniqueImages: 1, MinimumRequests: 2, ContentRequests: 2, PerMinimum: 1, ProtocolOverhead: ProtocolOverhead{Pings: 1, Total: 1, PerImage: 1}},
		Resources: Resources{Processes: []ProcessStats{{Name: "simulator", CPUSeconds: 1, PeakRSSBytes: 1 << 20}, {Name: "etcd", CPUSeconds: 1, PeakRSSBytes: 1 << 20}}},
		Timeline: []AppliedEvent{{Action: "webhookDown", AtSeconds: 2, EndSeconds: 4},
			{Action: "controllerDown", AtSeconds: 40, EndSeconds: 70, Registration: &Registration{UnregisteredAfter: 15.2, ReregisteredAfter: 0.5}},
			{Action: "controllerRestart", AtSeconds: 5, EndSeconds: 9, Failover: &Failover{Mode: "graceful", Replicas: 2, StoppedAt: 5, AcquiredAt: 5.2, ResumedAt: 5.3, Seconds: 0.3}},
			{Action: "controllerRestart", AtSeconds: 10, EndSeconds: 30, Failover: &Failover{Mode: "crash", Replicas: 2, StoppedAt: 10, AcquiredAt: 25, ResumedAt: 25.1, Seconds: 15.1}}},
	}
	for _, c := range scenario.CostComponents {
		r.Ratios["cost.cpuPer1kPods."+c] = 2
	}
	r.Handwritten = pass("handwritten", false, false)
	r.HandwrittenRatios = maps.Clone(r.Ratios)
	r.Floor = pass("floor", false, true)
	r.FloorRatios = maps.Clone(r.Ratios)
	return r
}

// TestValuesCoverEveryMetric keeps scenario.Metrics (what checks may name)
// and Values (what a report provides) in sync.
func TestValuesCoverEveryMetric(t *testing.T) {
	v := sample(1).Values()
	for _, m := range scenario.Metrics() {
		if _, ok := v[m.Name]; !ok {
			t.Errorf("metric %s is not provided by Report.Values", m.Name)
		}
	}
	for k := range v {
		if _, ok := scenario.Metric(k); !ok {
			t.Errorf("value %s is not a known metric", k)
		}
	}
}

func TestEvaluate(t *testing.T) {
	r := sample(1)
	r.Main.MisplacedPods = 2
	var checks []scenario.Check
	for _, s := range []string{"misplacedPods == 0", "cacheHitRate >= 99%", "schedule.p99 < 1s"} {
		c, err := scenario.ParseCheck(s)
		if err != nil {
			t.Fatal(err)
		}
		checks = append(checks, c)
	}
	got := Evaluate(r, checks)
	want := []bool{false, true, true}
	for i, o := range got {
		if o.Passed != want[i] || !o.Measured {
			t.Errorf("%s: passed %v measured %v, want passed %v", o.Check, o.Passed, o.Measured, want[i])
		}
	}
	r.Operator = nil
	if o := Evaluate(r, checks[1:2])[0]; o.Measured || o.Passed {
		t.Errorf("a metric the run lacks must fail unmeasured: %+v", o)
	}
}

// TestPassRowsLeaveOutWhatNoPassMeasured: without the fake kubelets' exec format errors no
// pass has a cell for those rows, and the table does not show them.
func TestPassRowsLeaveOutWhatNoPassMeasured(t *testing.T) {
	r := sample(1)
	for _, p := range r.Passes() {
		p.ExecFormat = nil
		delete(p.Latency, "execFormatDetection")
	}
	labels := map[string]bool{}
	for _, row := range passRows(r.Passes()) {
		labels[row.Label] = true
	}
	for _, unwanted := range []string{"exec format errors: reported / detected / missed / false", "execFormatDetection p50 / p90 / p99 / max"} {
		if labels[unwanted] {
			t.Errorf("row %q shown though no pass measured it", unwanted)
		}
	}
	if !labels["misplaced pods"] || !labels["never gated / placed at admission"] {
		t.Errorf("rows some pass measured are missing: %v", labels)
	}
}

func TestWriteAndLoad(t *testing.T) {
	dir := t.TempDir()
	r := sample(1)
	r.Environment.Dirty = true
	f, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantBase := filepath.Join(dir, "t", "0123456789ab-dirty-20260102T030405Z")
	if f.JSON != wantBase+".json" {
		t.Errorf("JSON file %s, want %s.json", f.JSON, wantBase)
	}
	for _, p := range []string{f.JSON, f.Markdown, f.LatencySVG, f.TimelineSVG} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", p, err)
		}
	}
	md, _ := os.ReadFile(f.Markdown)
	for _, want := range []string{"## Passes", "| misplaced pods |", "## Expectations", "-latency.svg", "## Cost per pass", "| **writes** | 3.25 | 3.25 |",
		"## Arrival steps, main pass — sustained 50 pods/s", "| controllerRestart |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	back, err := Load(f.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if !back.HasSamples() || len(back.Main.Samples.Schedule) != 1000 || len(back.Main.PerSecond.Bound) != 10 || len(back.Main.Trace) != 1 ||
		back.Main.Latency["schedule"].P99 != r.Main.Latency["schedule"].P99 {
		t.Error("samples or summaries lost in the round trip")
	}
	if len(r.Main.Samples.Schedule) != 1000 {
		t.Error("Write took the samples out of the report it was given")
	}
	summary, _ := os.ReadFile(f.JSON)
	if strings.Contains(string(summary), "scheduleUs") || strings.Contains(string(summary), `"perSecond"`) || strings.Contains(string(summary), `"trace"`) {
		t.Error("the summary holds the raw series")
	}
	if err := os.Remove(f.Raw); err != nil {
		t.Fatal(err)
	}
	alone, err := Load(f.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if alone.HasSamples() {
		t.Error("a summary without its raw file claims samples")
	}
	if diff := cmp.Diff(back.Values(), alone.Values(), cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("the summary alone gives other figures (-with raw +without):\n%s", diff)
	}
	os.WriteFile(f.JSON, []byte(strings.Replace(string(summary), `"schemaVersion": 2`, `"schemaVersion": 99`, 1)), 0o644)
	if _, err := Load(f.JSON); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Errorf("Load of another schema version: %v", err)
	}
}

// TestLoadLegacyReport: a report of schema version 1 holds its series in
// the one document, and Load reads them from it.
func TestLoadLegacyReport(t *testing.T) {
	r := sample(1)
	r.SchemaVersion = LegacySchemaVersion
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "legacy.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !back.HasSamples() || len(back.Main.Samples.Total) != 1000 {
		t.Errorf("legacy report loaded without its samples")
	}
}

func TestEvaluateGoal(t *testing.T) {
	r := sample(1) // schedule p99 about 25ms
	for name, tc := range map[string]struct {
		goal        string
		wantGoal    string
		wantGoalMet bool
		wantCell    string
	}{
		"no goal":      {wantCell: "—"},
		"goal met":     {goal: "500ms", wantGoal: "< 500ms", wantGoalMet: true, wantCell: "`< 500ms` met"},
		"goal not met": {goal: "1ms", wantGoal: "< 1ms", wantCell: "`< 1ms` **not met**"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := scenario.ParseCheck("schedule.p99 < 1s")
			if err != nil {
				t.Fatal(err)
			}
			if tc.goal != "" {
				if err := c.SetGoal(tc.goal); err != nil {
					t.Fatal(err)
				}
			}
			o := Evaluate(r, []scenario.Check{c})[0]
			if !o.Passed || o.Goal != tc.wantGoal || o.GoalMet != tc.wantGoalMet || o.GoalText() != tc.wantCell {
				t.Errorf("passed %v goal %q met %v cell %q, want passed, %q, %v, %q", o.Passed, o.Goal, o.GoalMet, o.GoalText(), tc.wantGoal, tc.wantGoalMet, tc.wantCell)
			}
		})
	}
}

func TestMarkdownClusterBlock(t *testing.T) {
	cluster := &Cluster{Server: "https://127.0.0.1:6443", ServerVersion: "v1.37.1", RunID: "ab12cd", RealNodes: 1, FakeNodes: 20,
		OtherFakeNodes: 3, Real: []string{"kube-scheduler", "archgate pods"}, Simulated: []string{"kwok nodes"}, NotAvailable: []string{"apiserver CPU"}}
	for _, tc := range []struct {
		name    string
		cluster *Cluster
		want    []string // lines the summary must hold; nil: no cluster section at all
	}{
		{"envtest run", nil, nil},
		{"existing cluster", cluster, []string{
			"## Cluster",
			"| existing cluster (run `ab12cd`) | |",
			"| server | https://127.0.0.1:6443 (v1.37.1) |",
			"| nodes | 1 real, 20 kwok nodes of the run, 3 other kwok nodes (not used) |",
			"| real | kube-scheduler; archgate pods |",
			"| simulated | kwok nodes |",
			"| not available | apiserver CPU |",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample(1)
			r.Cluster = tc.cluster
			var md strings.Builder
			if err := r.WriteMarkdown(&md, Files{}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(md.String(), "\n")
			if tc.want == nil && slices.Contains(lines, "## Cluster") {
				t.Errorf("an envtest report has a cluster section:\n%s", md.String())
			}
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("summary lacks the line %q:\n%s", w, md.String())
				}
			}
		})
	}
}

// TestRelativeCPU checks the speed-corrected cost: the components' CPU but the
// harness's, in units of the harness's; unmeasured without a harness of its own.
func TestRelativeCPU(t *testing.T) {
	cost := func(total float64, comps ...ComponentCost) *Cost {
		return &Cost{CPUSecondsPer1kPods: total, Components: comps}
	}
	harness := func(s float64) ComponentCost { return ComponentCost{Name: ComponentHarness, CPUSecondsPer1kPods: s} }
	apiserver := ComponentCost{Name: "kube-apiserver", CPUSecondsPer1kPods: 8}
	for _, tc := range []struct {
		name string
		cost *Cost
		want float64 // NaN: not measured
	}{
		{name: "the rest in harness units", cost: cost(10, apiserver, harness(2)), want: 4},
		{name: "a host twice as slow reads the same", cost: cost(20, ComponentCost{Name: "kube-apiserver", CPUSecondsPer1kPods: 16}, harness(4)), want: 4},
		{name: "no harness apart (in-process)", cost: cost(10, ComponentCost{Name: "simulator", CPUSecondsPer1kPods: 10}), want: math.NaN()},
		{name: "harness idle", cost: cost(8, apiserver, harness(0)), want: math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cost.RelativeCPU()
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
				t.Errorf("RelativeCPU() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMarkdownReconcilePhases: the operator section shows where a reconcile's time went, the
// phases in the order they run.
func TestMarkdownReconcilePhases(t *testing.T) {
	var md strings.Builder
	if err := sample(1).WriteMarkdown(&md, Files{}); err != nil {
		t.Fatal(err)
	}
	want := "- placement controller, mean per reconcile over 129: config 50µs, inspection 7.0ms, placement 100µs, patch 11.0ms"
	if !slices.Contains(strings.Split(md.String(), "\n"), want) {
		t.Errorf("no line %q in:\n%s", want, md.String())
	}
}
