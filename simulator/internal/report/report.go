// Package report is the simulator's report: the JSON summary a run writes
// (schema-versioned) with its raw series beside it (per-pod samples, so that
// compare can test differences; raw.go), its flat metric values for
// expectations and compare, the Markdown summary and the plots.
package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// StartWindow is the start of a pass that StartLatency reports apart.
const StartWindow = 10 * time.Second

// MinWindowPods is the fewest pods a StartWindow-long window needs for its p99 to count in
// Pass.WindowP99: with fewer, the p99 is the window's slowest pod or two.
const MinWindowPods = 100

// TypicalWindowP99 is the median p99 of the pass's later windows for the family, and false
// when the pass has fewer than two of them.
func (p *Pass) TypicalWindowP99(fam string) (float64, bool) {
	w, ok := p.WindowP99[fam]
	if !ok || w.N < 2 {
		return 0, false
	}
	return w.P50, true
}

// StartPenalty is the start window's p99 divided by a typical later window's of the same
// pass (TypicalWindowP99): what the pass's first 10 s cost beyond any 10 s of it.
func (p *Pass) StartPenalty(fam string) (float64, bool) {
	typical, ok := p.TypicalWindowP99(fam)
	start, sok := p.StartLatency[fam]
	if !ok || !sok || start.N == 0 || typical <= 0 {
		return 0, false
	}
	return start.P99 / typical, true
}

// SchemaVersion is the version of the JSON layout. Bump it on any change
// that an older compare could misread; Load rejects other versions but
// LegacySchemaVersion. Version 2 moved the series to the raw file (raw.go).
const SchemaVersion = 2

// LegacySchemaVersion is the layout before the raw file: one document with
// the series in it. Load still reads it (committed reports use it).
const LegacySchemaVersion = 1

// Report is one run of one scenario.
type Report struct {
	// SchemaVersion is the layout version of this document.
	SchemaVersion int `json:"schemaVersion"`
	// Scenario is what ran.
	Scenario ScenarioInfo `json:"scenario"`
	// Environment is where and at which commit it ran.
	Environment Environment `json:"environment"`
	// StartedAt is the UTC start time.
	StartedAt time.Time `json:"startedAt"`
	// WallSeconds is the whole run, control-plane start to report.
	WallSeconds float64 `json:"wallSeconds"`
	// Main is the main pass (with the operator when enabled).
	Main *Pass `json:"main"`
	// Baseline is the same workload without the operator, when asked for.
	Baseline *Pass `json:"baseline,omitempty"`
	// Ratios divide main-pass figures by the baseline's (throughput,
	// schedule.p50, …).
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// Handwritten is the same workload without the operator, every pod
	// carrying from creation the architecture affinity its images need, as
	// a user would write it; when asked for.
	Handwritten *Pass `json:"handwritten,omitempty"`
	// HandwrittenRatios divide main-pass figures by the handwritten pass's:
	// what archgate costs beyond the constraint it adds.
	HandwrittenRatios map[string]float64 `json:"handwrittenRatios,omitempty"`
	// Floor is the handwritten pass's workload with the affinity added at admission by the
	// simulator's minimal webhook or policy (the scenario's floorBaseline), when asked for.
	Floor *Pass `json:"floor,omitempty"`
	// FloorRatios divide main-pass figures by the floor pass's: what archgate costs beyond
	// what its admission design pays.
	FloorRatios map[string]float64 `json:"floorRatios,omitempty"`
	// Operator holds the operator's own counters, when it ran.
	Operator *OperatorStats `json:"operator,omitempty"`
	// Registry holds the fake registry's counters, when it ran.
	Registry *RegistryStats `json:"registry,omitempty"`
	// Resources is the CPU and memory of the processes.
	Resources Resources `json:"resources"`
	// Cluster describes the existing cluster of a run with --kubeconfig; nil for envtest.
	Cluster *Cluster `json:"cluster,omitempty"`
	// Timeline lists the events applied.
	Timeline []AppliedEvent `json:"timeline,omitempty"`
	// Expectations are the checks and their outcomes.
	Expectations []Outcome `json:"expectations"`
	// Oracle says whether the misplaced-pod count could see a misplacement
	// in this run: the baseline's misplaced pods against what the workload
	// should produce without the operator. Nil without a baseline.
	Oracle *Oracle `json:"oracle,omitempty"`
	// Passed is true when Failures is empty.
	Passed bool `json:"passed"`
	// Failures are the reasons the run failed (see Verdict): run errors,
	// missed expectations, deadlines hit, timeline events that failed or had
	// no observable effect, an oracle that saw nothing.
	Failures []string `json:"failures,omitempty"`
	// NotJudged is true when the only failures are checks not judged
	// because the machine was outside the scenario's headroom (a pass
	// saturated it, or its speed changed between compared passes): the
	// machine was too slow, busy or unsteady for the run, which says
	// nothing of the product.
	NotJudged bool `json:"notJudged,omitempty"`
	// Errors are problems of the run itself (watch lost, component failed).
	Errors []string `json:"errors,omitempty"`
}

// Passes returns the passes that ran, main first.
func (r *Report) Passes() []*Pass {
	var out []*Pass
	for _, p := range []*Pass{r.Main, r.Baseline, r.Handwritten, r.Floor} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// ScenarioInfo identifies the scenario of a run.
type ScenarioInfo struct {
	// Name of the scenario.
	Name string `json:"name"`
	// Description of the scenario.
	Description string `json:"description,omitempty"`
	// File is the scenario file's path as given.
	File string `json:"file"`
	// SHA256 of the file's bytes.
	SHA256 string `json:"sha256"`
	// Spec is the scenario with defaults applied.
	Spec *scenario.Scenario `json:"spec"`
}

// Environment is where a run happened.
type Environment struct {
	// Commit is the git commit of the work tree (short form in file names).
	Commit string `json:"commit"`
	// Dirty is true when the work tree differed from the commit (reports/
	// aside).
	Dirty bool `json:"dirty"`
	// Tree is the git tree hash of the work tree's content (reports/ aside):
	// equal trees ran the same code, dirty or not.
	Tree string `json:"tree"`
	// GoVersion is the Go toolchain that built the simulator.
	GoVersion string `json:"goVersion"`
	// KubernetesVersion is the apiserver's version.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Cores is the number of CPUs the process may use.
	Cores int `json:"cores"`
	// CPULimit is the run's cgroup CPU quota in cores (hack/cpu-limit.sh
	// stands in for a slower machine with one); 0 when it had the whole
	// machine. Utilization is judged against it.
	CPULimit float64 `json:"cpuLimit,omitempty"`
	// CPUModel is the CPU's model name.
	CPUModel string `json:"cpuModel,omitempty"`
	// MemoryBytes is the machine's memory.
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// Host is the host name; OS the GOOS/GOARCH and kernel.
	Host string `json:"host"`
	OS   string `json:"os"`
	// ControlPlane is "envtest" or the kubeconfig's server.
	ControlPlane string `json:"controlPlane"`
	// LoadAverage is the machine's highest 1-minute load average seen
	// during the run: above Cores, other work competed for the CPUs and the
	// figures are noisier.
	LoadAverage float64 `json:"loadAverage"`
	// ForeignCPUShare is the share of the machine's CPU capacity that
	// other processes (not the simulator, kube-apiserver or etcd) used
	// during the run. Above a few per cent the figures carry their noise.
	ForeignCPUShare float64 `json:"foreignCPUShare"`
}

// Cluster is the existing cluster a run used (simulator run --kubeconfig): which one, and
// which of its parts were real and which simulated.
type Cluster struct {
	// Server is the apiserver's URL as the kubeconfig names it.
	Server string `json:"server"`
	// ServerVersion is the apiserver's version (kubectl version's server line).
	ServerVersion string `json:"serverVersion"`
	// RunID labels (sim.archgate.io/run) everything the run created.
	RunID string `json:"runId"`
	// RealNodes counts the cluster's nodes no kwok keeps; FakeNodes the run's kwok nodes;
	// OtherFakeNodes kwok nodes that were not the run's (left alone, never used).
	RealNodes      int `json:"realNodes"`
	FakeNodes      int `json:"fakeNodes"`
	OtherFakeNodes int `json:"otherFakeNodes"`
	// Real lists the parts of the run that were the cluster's own; Simulated those that were
	// not; NotAvailable the figures such a run cannot take.
	Real         []string `json:"real"`
	Simulated    []string `json:"simulated"`
	NotAvailable []string `json:"notAvailable"`
}

// Pass is one pass of the workload.
type Pass struct {
	// Name is main or baseline.
	Name string `json:"name"`
	// Operator is true when the operator ran during the pass.
	Operator bool `json:"operator"`
	// Pods counts pods created; BoundPods those bound before the deadline.
	Pods      int `json:"pods"`
	BoundPods int `json:"boundPods"`
	// BoundByArch counts the bound pods by their node's architecture; BoundByOS by its
	// operating system.
	BoundByArch map[string]int `json:"boundByArch,omitempty"`
	BoundByOS   map[string]int `json:"boundByOS,omitempty"`
	// Schedulable counts pods whose images share a node pool's architecture.
	Schedulable int `json:"schedulable"`
	// MisplacedPods were bound to a node whose architecture some image of
	// the pod lacks (images without binaries run anywhere).
	MisplacedPods int `json:"misplacedPods"`
	// GatedAtEnd still carried the gate at the end; UnboundAtEnd had no node.
	GatedAtEnd   int `json:"gatedAtEnd"`
	UnboundAtEnd int `json:"unboundAtEnd"`
	// PendingByDesign counts pods that may end Pending (PendingReason says
	// why): with the operator, pods whose images share no architecture with
	// any node pool. The pass ends when every other pod is bound.
	PendingByDesign int    `json:"pendingByDesign"`
	PendingReason   string `json:"pendingReason,omitempty"`
	// NeverGatedPods were not gated (skipped by the webhook, or webhook down).
	NeverGatedPods int `json:"neverGatedPods"`
	// FallbackPods carry the fallback-arch label: their images could not be
	// inspected and archgate placed them on the fallbackArchitecture.
	FallbackPods int `json:"fallbackPods,omitempty"`
	// PlacedAtAdmissionPods were placed by the webhook at admission, never gated
	// (every image known to the controller).
	PlacedAtAdmissionPods int `json:"placedAtAdmissionPods"`
	// RunningPods counts the pods the fake kubelets reported running
	// (kubelet.runPods): one status write each.
	RunningPods int64 `json:"runningPods,omitempty"`
	// ExecFormat is the exec-format-error detection of the pass; nil unless
	// the fake kubelets report exec format errors (kubelet.execFormatErrors).
	ExecFormat *ExecFormat `json:"execFormat,omitempty"`
	// Placements counts pods by their multiarch.openshift.io/placement label
	// at the end ("" for none).
	Placements map[string]int `json:"placements,omitempty"`
	// Attacker is what became of the attacker's pods during the pass; the
	// pass's other figures leave them out. Nil without an attacker.
	Attacker *Attacker `json:"attacker,omitempty"`
	// Latency summarizes gateHold, schedule, total and create, in seconds.
	Latency map[string]stats.Summary `json:"latency"`
	// Throughput is pods bound per second, first create sent → last bound.
	Throughput float64 `json:"throughput"`
	// DurationSeconds is first create sent → last bound (or the deadline).
	DurationSeconds float64 `json:"durationSeconds"`
	// CreateSeconds is first → last create sent.
	CreateSeconds float64 `json:"createSeconds"`
	// ArrivalLagMaxSeconds is the worst delay of a create behind its schedule.
	ArrivalLagMaxSeconds float64 `json:"arrivalLagMaxSeconds"`
	// CalibrationSeconds is how long a fixed workload took on the harness
	// just before the pass (calibrate.NsPerOp, in seconds): the machine's
	// speed at that moment. Passes compare only at similar values.
	CalibrationSeconds float64 `json:"calibrationSeconds,omitempty"`
	// PerSecond counts transitions in each second of the pass. In the raw
	// file, not the summary (raw.go).
	PerSecond PerSecond `json:"perSecond,omitzero"`
	// Samples are the per-pod latencies in microseconds, for compare. In
	// the raw file, not the summary.
	Samples Samples `json:"samples,omitzero"`
	// Trace is each pod's timeline, pods in index order. In the raw file,
	// not the summary: what a latency figure is made of, pod by pod.
	Trace []PodTrace `json:"trace,omitempty"`
	// StartLatency and RestLatency split Latency by when each pod's create
	// was sent: within the pass's first StartWindow (caches, connections
	// and replicas warming up) or after it (the steady state).
	StartLatency map[string]stats.Summary `json:"startLatency,omitempty"`
	RestLatency  map[string]stats.Summary `json:"restLatency,omitempty"`
	// WindowP99 is, by latency family (create, schedule), the spread of the p99s of the
	// pass's later StartWindow-long windows (by when the create was sent, each with at least
	// MinWindowPods pods). Its median is a typical window of the same pass, which the start
	// window is judged against: a pass's first 10 s, before its first collection of the
	// apiserver's heap and its first 30-s admission re-list, can be its quietest, so a start
	// compared with another pass's start compares where those fall, not what starting costs.
	WindowP99 map[string]stats.Summary `json:"windowP99,omitempty"`
	// Recorder is the watch recorder's bookkeeping.
	Recorder RecorderStats `json:"recorder"`
	// SchedulerSLI is the scheduler's own pod_scheduling_sli_duration_seconds
	// over the pass, a cross-check of Latency["schedule"].
	SchedulerSLI *HistogramStats `json:"schedulerSLI,omitempty"`
	// Admission is the apiserver's own account of mutating admission over the pass.
	Admission *AdmissionCost `json:"admission,omitempty"`
	// APIServerRuntime is what the apiserver's Go runtime says about the pass.
	APIServerRuntime *APIServerRuntime `json:"apiserverRuntime,omitempty"`
	// DeadlineHit is true when the pass ended at the deadline.
	DeadlineHit bool `json:"deadlineHit"`
	// Cost is the pass's CPU, memory and apiserver requests per component.
	Cost *Cost `json:"cost,omitempty"`
	// Steps summarises each arrival step (arrival mode steps), and
	// SustainedRate is the highest step rate held before the first step
	// whose total p99 exceeded the scenario's sustainLatency.
	Steps         []StepStats `json:"steps,omitempty"`
	SustainedRate float64     `json:"sustainedRate,omitempty"`
}

// StepStats is one arrival step's outcome.
type StepStats struct {
	// Rate is the step's arrival rate; StartSeconds its start in the pass.
	Rate         float64 `json:"rate"`
	StartSeconds float64 `json:"startSeconds"`
	// Pods were due in the step; Unbound of them never bound.
	Pods    int `json:"pods"`
	Unbound int `json:"unbound"`
	// TotalP50 and TotalP99 are create-to-bound latencies in seconds
	// (+Inf when more than the quantile's share never bound).
	TotalP50 float64 `json:"totalP50"`
	TotalP99 float64 `json:"totalP99"`
	// Sustained is true for the steps up to the sustained rate; WarmUp
	// steps count neither way.
	Sustained bool `json:"sustained"`
	WarmUp    bool `json:"warmUp,omitempty"`
}

// PerSecond counts what happened in each second of a pass.
type PerSecond struct {
	// Created, Ungated and Bound count pods per second.
	Created []int `json:"created"`
	Ungated []int `json:"ungated"`
	Bound   []int `json:"bound"`
}

// PodTrace is one pod's timeline in microseconds from the pass's epoch, -1
// for what never happened: its create sent and returned, and the recorder's
// first watch delivery of the pod, with the gate, without it after it, and
// with a node.
type PodTrace struct {
	Sent    int64 `json:"sent"`
	Created int64 `json:"created"`
	Seen    int64 `json:"seen"`
	Gated   int64 `json:"gated"`
	Ungated int64 `json:"ungated"`
	Bound   int64 `json:"bound"`
}

// Samples are per-pod latencies in microseconds, pods in index order
// (pods without the transition left out).
type Samples struct {
	GateHold []int64 `json:"gateHoldUs,omitempty"`
	Schedule []int64 `json:"scheduleUs"`
	Total    []int64 `json:"totalUs"`
	Create   []int64 `json:"createUs"`
}

// Seconds returns a sample family in seconds.
func (s Samples) Seconds(name string) []float64 {
	var us []int64
	switch name {
	case "gateHold":
		us = s.GateHold
	case "schedule":
		us = s.Schedule
	case "total":
		us = s.Total
	case "create":
		us = s.Create
	}
	out := make([]float64, len(us))
	for i, v := range us {
		out[i] = float64(v) / 1e6
	}
	return out
}

// RecorderStats is the recorder's bookkeeping.
type RecorderStats struct {
	// Events received and Drops dropped (buffer full).
	Events int64 `json:"events"`
	Drops  int64 `json:"drops"`
}

// HistogramStats are quantiles estimated from a Prometheus histogram.
type HistogramStats struct {
	// Count of observations; P50 and P99 in seconds.
	Count float64 `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
}

// OperatorStats are the operator's counters over the main pass.
type OperatorStats struct {
	// CacheHits and CacheMisses of the inspection cache; CacheHitRate is
	// hits / (hits + misses).
	CacheHits    float64 `json:"cacheHits"`
	CacheMisses  float64 `json:"cacheMisses"`
	CacheHitRate float64 `json:"cacheHitRate"`
	// CacheDedupWaits are misses that waited for an inspection in flight.
	CacheDedupWaits float64 `json:"cacheDedupWaits"`
	// Inspections counts registry inspections; InspectionErrors by reason.
	Inspections      float64            `json:"inspections"`
	InspectionErrors map[string]float64 `json:"inspectionErrors,omitempty"`
	// WebhookGated and WebhookSkipped (by reason) count admission decisions.
	WebhookGated   float64            `json:"webhookGated"`
	WebhookSkipped map[string]float64 `json:"webhookSkipped,omitempty"`
	// PhaseMeanSeconds is the mean time the placement controller's reconciles spent in each
	// phase (config, credentials, inspection, placement, patch: the pod write), over
	// Reconciles reconciles: where a gated pod's wait goes.
	PhaseMeanSeconds map[string]float64 `json:"phaseMeanSeconds,omitempty"`
	Reconciles       float64            `json:"reconciles,omitempty"`
	// Counters are every counter the components exported, by series.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Restarts counts, by Deployment, the component processes that ended
	// on their own during the pass and were restarted (operator mode);
	// OOMKills those of them killed over their container's memory limit.
	Restarts map[string]int `json:"restarts,omitempty"`
	OOMKills map[string]int `json:"oomKills,omitempty"`
}

// RegistryStats are the fake registry's counters over the main pass.
type RegistryStats struct {
	// Requests by kind, and Total.
	Requests map[string]uint64 `json:"requests"`
	Total    uint64            `json:"total"`
	// Statuses counts answers by HTTP status (0: aborted).
	Statuses map[string]uint64 `json:"statuses,omitempty"`
	// Faults counts injected faults by kind.
	Faults map[string]uint64 `json:"faults,omitempty"`
	// Repositories counts the requests that named a repository, by repository and request kind:
	// what each image cost the registry.
	Repositories map[string]map[string]uint64 `json:"repositories,omitempty"`
	// UniqueImages is the number of distinct images (repository@digest) of
	// the pods the operator gates.
	UniqueImages int `json:"uniqueImages"`
	// MinimumRequests is the least any client must ask: per unique image
	// its manifest, plus the config blob of a single-platform manifest,
	// plus with bearer auth one token per repository (MinimumTokens of
	// them). Reports before this field's split also counted a /v2/ ping and
	// a token per image.
	MinimumRequests int `json:"minimumRequests"`
	MinimumTokens   int `json:"minimumTokens,omitempty"`
	// ProtocolOverhead is what the client's protocol asked beyond the
	// minimum (pings, repeated tokens).
	ProtocolOverhead ProtocolOverhead `json:"protocolOverhead"`
	// ContentRequests is Total − ProtocolOverhead.Total.
	ContentRequests uint64 `json:"contentRequests"`
	// PerMinimum is ContentRequests / MinimumRequests: 1 when every image
	// was read once (the expectation's registryRequestsPerMinimum).
	PerMinimum float64 `json:"perMinimum"`
	// AllPerMinimum is Total / MinimumRequests, overhead included.
	AllPerMinimum float64 `json:"allPerMinimum"`
}

// ProtocolOverhead counts registry requests beyond the minimum that the
// client's protocol made.
type ProtocolOverhead struct {
	// Pings are /v2/ requests; ExtraTokens tokens beyond one per repository.
	Pings       uint64 `json:"pings"`
	ExtraTokens uint64 `json:"extraTokens"`
	// Total is their sum; PerImage Total per unique image.
	Total    uint64  `json:"total"`
	PerImage float64 `json:"perImage"`
}

// Resources is CPU and memory use.
type Resources struct {
	// Processes are the simulator and its control-plane children.
	Processes []ProcessStats `json:"processes"`
	// Samples are periodic readings (seconds from start, cumulative CPU
	// seconds and RSS bytes by process).
	Samples []ResourceSample `json:"samples,omitempty"`
}

// ProcessStats is one process's totals.
type ProcessStats struct {
	// Name is simulator, kube-apiserver or etcd.
	Name string `json:"name"`
	// CPUSeconds is user plus system time.
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is the peak resident set (VmHWM / ru_maxrss).
	PeakRSSBytes int64 `json:"peakRSSBytes"`
}

// ResourceSample is one periodic reading.
type ResourceSample struct {
	// At is seconds from the start of the run.
	At float64 `json:"at"`
	// CPUSeconds and RSSBytes by process name.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	RSSBytes   map[string]int64   `json:"rssBytes"`
}

// AppliedEvent is a timeline event as it happened.
type AppliedEvent struct {
	// Action is the event's action; Spec its settings.
	Action string          `json:"action"`
	Spec   json.RawMessage `json:"spec,omitempty"`
	// AtSeconds and EndSeconds are offsets from the main pass's start.
	AtSeconds  float64 `json:"atSeconds"`
	EndSeconds float64 `json:"endSeconds,omitempty"`
	// Effect is what the run observed the event to do (faults the registry
	// injected, the controller's failover); an event without one fails the
	// run.
	Effect string `json:"effect,omitempty"`
	// Failover is the controller's failover, for controllerRestart.
	Failover *Failover `json:"failover,omitempty"`
	// Registration is what the operator did with the webhook's registration
	// during a controllerDown or webhookDown window (operator mode).
	Registration *Registration `json:"registration,omitempty"`
	// Error is set when applying or reverting it failed, when it was not
	// reached, or when it had no observable effect.
	Error string `json:"error,omitempty"`
}

// Registration follows the scheduling-gate webhook's registration
// (MutatingWebhookConfiguration) through a component's downtime: the operator
// removes it once the component has been unavailable for its fail-open grace
// and applies it again once the component is back. Seconds; negative when not
// seen.
type Registration struct {
	// UnregisteredAfter runs from the component going down to the removal.
	UnregisteredAfter float64 `json:"unregisteredAfterSeconds"`
	// ReregisteredAfter runs from the component being let run again to the
	// registration's return.
	ReregisteredAfter float64 `json:"reregisteredAfterSeconds"`
}

// Failover is one controller stop (graceful: SIGTERM, the lease released on
// cancel; crash: SIGKILL, the lease left to expire) and the recovery after
// it. Offsets are seconds from the main pass's start; a negative offset was
// not observed.
type Failover struct {
	// Mode is graceful or crash; Replicas the controller instances (1: no
	// leader election, the stopped instance is started again after the
	// downtime).
	Mode     string `json:"mode"`
	Replicas int    `json:"replicas"`
	// StoppedAt is when the leader was signalled; AcquiredAt when another
	// instance held the lease (replicas 2); ResumedAt the first gate removal
	// seen after that.
	StoppedAt  float64 `json:"stoppedAt"`
	AcquiredAt float64 `json:"acquiredAt"`
	ResumedAt  float64 `json:"resumedAt"`
	// LeaseDurationSeconds is the lease's spec.leaseDurationSeconds as the
	// old leader wrote it: how long a standby waits out a crashed leader.
	LeaseDurationSeconds float64 `json:"leaseDurationSeconds,omitempty"`
	// Seconds is StoppedAt → ResumedAt, the time no pod was released.
	Seconds float64 `json:"seconds"`
}

// Oracle is the self-check of the misplaced-pod count.
type Oracle struct {
	// AtRiskPods are the pods without an architecture pin of their own whose
	// images lack some node pool's architecture: without the operator the
	// scheduler may bind them anywhere.
	AtRiskPods int `json:"atRiskPods"`
	// ExpectedMisplaced is the misplacements expected without the operator
	// if the scheduler spread those pods evenly over the nodes.
	ExpectedMisplaced float64 `json:"expectedMisplaced"`
	// BaselineMisplaced is what the baseline pass measured.
	BaselineMisplaced int `json:"baselineMisplaced"`
}

// Attacker is what became of a hostile tenant's pods (scenario attacker).
type Attacker struct {
	// Planned pods of each kind (where their images are), and Pods created.
	Planned map[string]int `json:"planned"`
	Pods    int            `json:"pods"`
	// BoundPods and GatedAtEnd are the pods bound and still gated at the end.
	BoundPods  int `json:"boundPods"`
	GatedAtEnd int `json:"gatedAtEnd"`
	// GateHoldMaxSeconds is the longest an attack pod held the scheduling
	// gate: to its removal, or to the end of the pass when it kept it.
	GateHoldMaxSeconds float64 `json:"gateHoldMaxSeconds"`
	// MaxGateAgeSeconds is the cluster's maxGateAge; OverMaxGateAge counts
	// the attack pods that held the gate longer, by more than
	// GateAgeGraceSeconds (the watch's and the controller's own delay).
	MaxGateAgeSeconds float64 `json:"maxGateAgeSeconds"`
	OverMaxGateAge    int     `json:"overMaxGateAge"`
}

// GateAgeGraceSeconds is how far past maxGateAge an attack pod may keep
// the gate before it counts as over: the controller releases it on a
// requeue at its deadline, and the watch reports the removal a little later.
const GateAgeGraceSeconds = 2.0

// Outcome is one checked expectation.
type Outcome struct {
	// Check as written, and the Source of its threshold.
	Check  string `json:"check"`
	Source string `json:"source"`
	// Metric, Unit and the measured Value (NaN-free: Measured false when the
	// run did not produce it).
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit"`
	Value    float64 `json:"value"`
	Measured bool    `json:"measured"`
	// Passed is true when the check held.
	Passed bool `json:"passed"`
	// Goal is the value aimed for ("<op> <value>", Check.GoalText) when the
	// check is a looser guard; GoalMet says whether the measured value
	// reached it. Neither changes Passed.
	Goal    string `json:"goal,omitempty"`
	GoalMet bool   `json:"goalMet,omitempty"`
	// NotJudged says why the machine could not judge the check: a latency
	// or rate check on a pass that used more of the machine than the
	// scenario's headroom allows (its value measures queueing for the
	// CPU), or a ratio between passes that ran at different machine
	// speeds (its value measures the host). The check fails for that
	// reason whatever its value.
	NotJudged string `json:"notJudged,omitempty"`
}

// Evaluate checks every expectation against the report's values.
func Evaluate(r *Report, checks []scenario.Check) []Outcome {
	values := r.Values()
	out := make([]Outcome, 0, len(checks))
	for _, c := range checks {
		v, ok := values[c.Metric.Name]
		o := Outcome{Check: c.Text, Source: c.Source, Metric: c.Metric.Name, Unit: string(c.Metric.Unit)}
		if ok && !math.IsNaN(v) {
			o.Value, o.Measured = v, true
			o.Passed = c.Op.Holds(v, c.Value)
			o.GoalMet = c.HasGoal && c.Op.Holds(v, c.Goal)
		}
		o.Goal = c.GoalText()
		if o.NotJudged = r.notJudged(c, o); o.NotJudged != "" {
			o.Passed = false
		}
		out = append(out, o)
	}
	return out
}

// capacityText names the CPU a run had: the machine's cores, or its quota.
func (e Environment) capacityText() string {
	if e.CPULimit > 0 {
		return fmt.Sprintf("its CPU quota of %.2f cores", e.CPULimit)
	}
	return fmt.Sprintf("%d cores", e.Cores)
}

// notJudged says why the machine was outside the scenario's headroom for
// check c, measured as o; empty when it was within.
func (r *Report) notJudged(c scenario.Check, o Outcome) string {
	if r.Scenario.Spec == nil || r.Scenario.Spec.Headroom == nil {
		return ""
	}
	h := r.Scenario.Spec.Headroom
	m := c.Metric
	var why []string
	if m.Timing && h.MaxUtilization > 0 {
		if s := r.saturation(m.Passes(), h.MaxUtilization); s != "" {
			why = append(why, s)
		}
	}
	if h.MaxSpeedChange > 0 && m.ComparesPasses() {
		if s, factor := r.speedChange(m.Passes(), h.MaxSpeedChange); s != "" && !(o.Measured && speedProof(c, o.Value, factor, h.MaxSpeedChange)) {
			why = append(why, s)
		}
	}
	if h.MaxHarnessChange > 0 && m.Timing && m.ComparesPasses() {
		if s, factor := r.harnessChange(m.Passes(), h.MaxHarnessChange); s != "" && !(o.Measured && speedProof(c, o.Value, factor, h.MaxHarnessChange)) {
			why = append(why, s)
		}
	}
	return strings.Join(why, "; ")
}

// harnessChange says whether the harness's CPU per pod differed between the
// named passes by more than limit, and by which factor (≥ 1); empty when it
// did not or a pass has no harness figure (components in-process). The
// harness creates, watches and records the same pods at the same rate in
// every pass, so a change in its CPU is the machine's speed during the pass,
// which the calibration before it cannot see.
func (r *Report) harnessChange(passes []string, limit float64) (string, float64) {
	a, b, factor, ok := r.readingApart(passes, func(p *Pass) float64 {
		h, _ := p.Cost.Component(ComponentHarness)
		return h.CPUSecondsPer1kPods
	})
	if !ok || factor-1 <= limit {
		return "", factor
	}
	return fmt.Sprintf("machine unsteady during the passes: the harness, whose work per pod is the same in each, took %.2f CPU-s per 1,000 pods in the %s pass and %.2f in the %s pass (×%.2f), beyond the ±%.0f%% a latency ratio needs, and the check is close enough to its threshold that the change could flip it",
		a.value, a.pass, b.value, b.pass, a.value/b.value, 100*limit), factor
}

// passReading is one pass's reading of a measure of the machine's speed.
type passReading struct {
	pass  string
	value float64
}

// readingApart reads the first two of the named passes that have a positive
// reading and returns them and the factor (≥ 1) between them; ok is false
// when fewer than two have one.
func (r *Report) readingApart(passes []string, read func(*Pass) float64) (a, b passReading, factor float64, ok bool) {
	var got []passReading
	for _, p := range r.Passes() {
		if v := read(p); slices.Contains(passes, p.Name) && v > 0 {
			got = append(got, passReading{p.Name, v})
		}
	}
	if len(got) < 2 {
		return a, b, 1, false
	}
	a, b = got[0], got[1]
	return a, b, max(a.value/b.value, b.value/a.value), true
}

// maxSpeedProofChanges bounds speedProof: beyond this many times the
// scenario's maxSpeedChange the host moved too much for the model below to
// be trusted, and no ratio between the passes is judged.
const maxSpeedProofChanges = 3

// speedProof reports whether check c decides the same for a ratio between
// two passes whose machine speeds were factor apart (factor > 1) whichever
// pass the change favoured: the verdict holds for every value from v/factor
// to v×factor. A pass on a machine f times slower takes about f times the
// time and CPU (the first-order model the speed limit itself assumes), so a
// ratio so far from its threshold that the change cannot flip it is judged
// as measured. A check close enough to flip stays not judged, and so does
// every check once the change exceeds maxSpeedProofChanges × limit.
func speedProof(c scenario.Check, v, factor, limit float64) bool {
	if factor-1 > maxSpeedProofChanges*limit {
		return false
	}
	return c.Op.Holds(v*factor, c.Value) == c.Op.Holds(v/factor, c.Value)
}

// speedChange says whether the machine's speed (calibration) differed
// between the named passes by more than limit, and by which factor (≥ 1);
// empty when it did not or a pass has no calibration.
func (r *Report) speedChange(passes []string, limit float64) (string, float64) {
	a, b, factor, ok := r.readingApart(passes, func(p *Pass) float64 { return p.CalibrationSeconds })
	if !ok || factor-1 <= limit {
		return "", factor
	}
	return fmt.Sprintf("machine unsteady: calibration %.2fµs before the %s pass and %.2fµs before the %s pass (×%.3f), beyond the ±%.0f%% a comparison of passes needs, and the check is close enough to its threshold that the change could flip it",
		a.value*1e6, a.pass, b.value*1e6, b.pass, a.value/b.value, 100*limit), factor
}

// saturation says which of the named passes used more than limit of the
// machine; empty when none did.
func (r *Report) saturation(passes []string, limit float64) string {
	var over []string
	for _, p := range r.Passes() {
		if p.Cost == nil || !slices.Contains(passes, p.Name) || p.Cost.Utilization <= limit {
			continue
		}
		over = append(over, fmt.Sprintf("the %s pass used %.0f%% of %s", p.Name, 100*p.Cost.Utilization, r.Environment.capacityText()))
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("machine saturated: %s, above the %.0f%% a latency verdict needs", strings.Join(over, " and "), 100*limit)
}

// Load reads a report summary, with its raw series when the raw file is
// beside it (HasSamples says), or a legacy report, and checks the schema
// version.
func Load(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.SchemaVersion != SchemaVersion && r.SchemaVersion != LegacySchemaVersion {
		return nil, fmt.Errorf("%s: schema version %d, this simulator reads %d and %d", path, r.SchemaVersion, LegacySchemaVersion, SchemaVersion)
	}
	if r.Main == nil {
		return nil, fmt.Errorf("%s: no main pass", path)
	}
	if r.SchemaVersion == SchemaVersion {
		if err := loadRaw(path, &r); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// ExecFormat counts what the fake kubelets reported and what the
// exec-format-error monitor detected. Its latency is the pass's
// "execFormatDetection" family: status with the error seen → label seen.
type ExecFormat struct {
	// ReportedPods got the exec-format-error status from the fake kubelet
	// (one status write each); StatusWriteErrors failed.
	ReportedPods      int64 `json:"reportedPods"`
	StatusWriteErrors int64 `json:"statusWriteErrors"`
	// DetectedPods carry the multiarch.openshift.io/exec-format-error label
	// at the end; MissedPods are misplaced pods without it, FalseDetections
	// labelled pods that are not misplaced.
	DetectedPods    int `json:"detectedPods"`
	MissedPods      int `json:"missedPods"`
	FalseDetections int `json:"falseDetections"`
	// Monitor says whether the exec-format-error monitor ran in this pass.
	Monitor bool `json:"monitor"`
}

// attacker is the main pass's attacker summary; nil without one.
func (r *Report) attacker() *Attacker {
	if r.Main == nil {
		return nil
	}
	return r.Main.Attacker
}

// APIServerRuntime is the apiserver's Go runtime over a pass, from its own metrics: what it
// allocated per pod, and how often and at what CPU it collected its heap. Every collection of
// a large heap is a burst of CPU in which the apiserver's requests wait, so a pass that
// allocates more in the apiserver meets more of them.
type APIServerRuntime struct {
	// LiveHeapBytesAtStart is go_gc_heap_live_bytes read right after the collection the pass
	// starts with: the heap the apiserver carries into the pass (what the passes before left
	// in it), which each collection of the pass marks again.
	LiveHeapBytesAtStart float64 `json:"liveHeapBytesAtStart"`
	// AllocatedBytesPerPod is go_gc_heap_allocs_bytes_total over the pass, per pod.
	AllocatedBytesPerPod float64 `json:"allocatedBytesPerPod"`
	// GCCycles is go_gc_cycles_total_gc_cycles_total over the pass (the pass starts right
	// after a forced one, which is not counted).
	GCCycles float64 `json:"gcCycles"`
	// GCCPUSecondsPer1kPods is go_cpu_classes_gc_total_cpu_seconds_total over the pass, per
	// 1,000 pods: the collector's own CPU, its mark assists included.
	GCCPUSecondsPer1kPods float64 `json:"gcCPUSecondsPer1kPods"`
}

// AdmissionCost is what the apiserver's admission metrics say about a pass: the time its
// mutating admission step took (built-in plugins, admission policies and webhook calls, for
// every CREATE: pods, bindings and events alike), and its webhook calls, per pod created.
type AdmissionCost struct {
	// MutatingSecondsPerPod is apiserver_admission_step_admission_duration_seconds (type
	// admit, operation CREATE), summed over the pass, per pod.
	MutatingSecondsPerPod float64 `json:"mutatingSecondsPerPod"`
	// WebhookCallsPerPod and WebhookSecondsPerPod are
	// apiserver_admission_webhook_admission_duration_seconds (operation CREATE) per pod.
	WebhookCallsPerPod   float64 `json:"webhookCallsPerPod"`
	WebhookSecondsPerPod float64 `json:"webhookSecondsPerPod"`
	// PolicyChecksPerPod is apiserver_mutating_admission_policy_check_total per pod.
	PolicyChecksPerPod float64 `json:"policyChecksPerPod"`
	// ReinvokedPerPod counts, per pod, the CREATEs whose built-in mutating plugins the
	// apiserver ran a second time because a webhook or policy changed the object
	// (apiserver_admission_controller_admission_duration_seconds of the most-called plugin
	// less the step's count): about 1 for a pod placed at admission, 0 for one created placed.
	ReinvokedPerPod float64 `json:"reinvokedPerPod"`
}
