package scenario

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Unit is the unit of a metric, which decides how a threshold is written.
type Unit string

// Units of metrics.
const (
	// UnitCount is a number of things (pods, requests): a plain number.
	UnitCount Unit = "count"
	// UnitDuration is a time: a Go duration ("200ms"); stored in seconds.
	UnitDuration Unit = "duration"
	// UnitRatio is a fraction: a number ("0.99") or a percentage ("99%").
	UnitRatio Unit = "ratio"
	// UnitRate is per second: a plain number.
	UnitRate Unit = "rate"
	// UnitBytes is a size: a quantity ("1.5Gi", "800Mi"); stored in bytes.
	UnitBytes Unit = "bytes"
	// UnitFactor is a multiple of a reference (baseline, physical
	// minimum): a plain number ("0.9", "1.5").
	UnitFactor Unit = "factor"
)

// Needs says which part of a run a metric requires.
type Needs string

// What a metric needs to be measured.
const (
	// NeedsNothing: measured by every run.
	NeedsNothing Needs = ""
	// NeedsOperator: only measured when operator.enabled.
	NeedsOperator Needs = "operator"
	// NeedsBaseline: only measured with a baseline pass.
	NeedsBaseline Needs = "baseline"
	// NeedsHandwritten: only measured with a handwritten-affinity pass.
	NeedsHandwritten Needs = "handwrittenBaseline"
	// NeedsFloor: only measured with a floor pass (floorBaseline).
	NeedsFloor Needs = "floorBaseline"
	// NeedsFloorGate: only measured with a floor pass that gates (floorGate).
	NeedsFloorGate Needs = "floorGate"
	// NeedsAttacker: only measured with an attacker.
	NeedsAttacker Needs = "attacker"
)

// MetricInfo describes a metric expectations can check.
type MetricInfo struct {
	// Name as written in a check.
	Name string
	// Unit of the metric.
	Unit Unit
	// Needs says what the run must include for the metric to exist.
	Needs Needs
	// Higher is true when a higher value is better (throughput, hit rate);
	// compare uses it to call a change a regression or an improvement.
	Higher bool
	// Timing is true for latencies and rates: figures that queueing for
	// the CPU changes, so they are judged only while the machine had
	// headroom (Scenario.Headroom).
	Timing bool
	// Help says what the metric is.
	Help string
}

// ComparesPasses is true for a ratio between two passes whose verdict needs
// the passes to have run at one machine speed; the calibration ratios are
// not, since they are the measure of whether two passes compare, and nor are
// the relativeCPU ratios, which carry their own correction for the speed.
func (m MetricInfo) ComparesPasses() bool {
	return len(m.Passes()) > 1 && !strings.HasSuffix(m.Name, ".calibration") && !strings.HasSuffix(m.Name, ".relativeCPU")
}

// Passes names the passes a metric is measured on: "main", "baseline",
// "handwritten" or "floor", and both passes of a ratio.
func (m MetricInfo) Passes() []string {
	prefix, _, _ := strings.Cut(m.Name, ".")
	switch prefix {
	case "baseline", "handwritten", "floor":
		return []string{prefix}
	case "ratio":
		return []string{"main", "baseline"}
	case "handwrittenRatio":
		return []string{"main", "handwritten"}
	case "floorRatio":
		return []string{"main", "floor"}
	}
	return []string{"main"}
}

// WindowFamilies are the latency families whose 10-s windows a report compares: each pass's
// typicalWindow.<family>.p99 and startPenalty.<family>.
var WindowFamilies = []string{"create", "schedule"}

// LatencyStats are the statistics reported for each latency.
var LatencyStats = []string{"p50", "p90", "p99", "max", "mean"}

// Metrics lists every metric a check may name, in a stable order. Pass
// metrics exist for the main pass (bare) and, prefixed "baseline.",
// "handwritten." and "floor.", for the passes without the operator; "ratio."
// metrics divide the main pass by the baseline, "handwrittenRatio." ones by the
// handwritten-affinity pass, "floorRatio." ones by the floor pass.
func Metrics() []MetricInfo { return slices.Clone(metrics()) }

var metrics = sync.OnceValue(buildMetrics)

// CostComponents are the components whose cost a report breaks out.
var CostComponents = []string{"kube-apiserver", "etcd", "kube-controller-manager", "scheduler", "webhook", "controller", "local-webhook", "local-controller", "harness", "simulator"}

// buildMetrics lists every metric a report can carry. It is long on purpose: one entry per
// metric family is the table itself.
func buildMetrics() []MetricInfo {
	var out []MetricInfo
	// gates is what gates the pass's pods (the operator, the floor's gate), NeedsNothing for
	// a pass whose pods are never gated.
	pass := func(prefix string, needs Needs, operatorOff bool, gates Needs) {
		latencies := []struct{ name, help string }{
			{"gateHold", "time a pod spent gated: gated seen → ungated seen"},
			{"schedule", "ungated (or created, if never gated) seen → bound seen"},
			{"total", "create request sent → bound seen"},
			{"create", "create request sent → create answered (admission included)"},
			{"execFormatDetection", "exec-format-error status seen → exec-format-error label seen (kubelet.execFormatErrors)"},
		}
		windows := []struct{ prefix, help string }{
			{"", ""},
			{"start.", " (pods whose create was sent in the pass's first 10 s)"},
			{"rest.", " (pods whose create was sent after the pass's first 10 s)"},
		}
		for _, l := range latencies {
			n := needs
			switch l.name {
			case "gateHold":
				if gates == NeedsNothing {
					continue // never gated
				}
				n = gates
			case "execFormatDetection":
				if operatorOff {
					continue
				}
				n = NeedsOperator
			}
			for _, w := range windows {
				if w.prefix != "" && l.name == "execFormatDetection" {
					continue
				}
				for _, s := range LatencyStats {
					out = append(out, MetricInfo{Name: prefix + w.prefix + l.name + "." + s, Unit: UnitDuration, Needs: n, Timing: true, Help: l.help + w.help})
				}
			}
		}
		for _, fam := range WindowFamilies {
			out = append(out,
				MetricInfo{Name: prefix + "typicalWindow." + fam + ".p99", Unit: UnitDuration, Needs: needs, Timing: true,
					Help: "median over the pass's 10-s windows after the first (by create sent, 100 pods or more) of each window's " + fam + " p99: a typical 10 s of the pass"},
				MetricInfo{Name: prefix + "startPenalty." + fam, Unit: UnitFactor, Needs: needs, Timing: true,
					Help: "start." + fam + ".p99 divided by typicalWindow." + fam + ".p99: what the pass's first 10 s cost beyond a typical 10 s of the same pass"})
		}
		out = append(out,
			MetricInfo{Name: prefix + "throughput", Unit: UnitRate, Needs: needs, Higher: true, Timing: true, Help: "pods bound per second, first create sent → last bound"},
			MetricInfo{Name: prefix + "utilization", Unit: UnitRatio, Needs: needs, Help: "share of the machine's CPU (all cores, every process, other work included) busy over the pass"},
			MetricInfo{Name: prefix + "pods", Unit: UnitCount, Needs: needs, Help: "pods created"},
			MetricInfo{Name: prefix + "boundPods", Unit: UnitCount, Needs: needs, Higher: true, Help: "pods bound before the deadline"},
			MetricInfo{Name: prefix + "misplacedPods", Unit: UnitCount, Needs: needs, Help: "pods bound to a node whose architecture some image of the pod lacks"},
			MetricInfo{Name: prefix + "gatedAtEnd", Unit: UnitCount, Needs: needs, Help: "pods still carrying the scheduling gate at the end"},
			MetricInfo{Name: prefix + "unboundAtEnd", Unit: UnitCount, Needs: needs, Help: "pods not bound at the end (gated or not)"},
			MetricInfo{Name: prefix + "recorderDrops", Unit: UnitCount, Needs: needs, Help: "watch events the recorder dropped because its buffer was full"},
			MetricInfo{Name: prefix + "arrivalLag.max", Unit: UnitDuration, Needs: needs, Timing: true, Help: "worst delay of a create behind its scheduled arrival time"},
			MetricInfo{Name: prefix + "calibration", Unit: UnitDuration, Needs: needs, Help: "time of one SHA-256 of 64 KiB on the harness just before the pass: the machine's speed then (lower is faster)"},
			MetricInfo{Name: prefix + "execFormatReportedPods", Unit: UnitCount, Needs: needs, Help: "misplaced pods the fake kubelets gave an exec-format-error status (kubelet.execFormatErrors)"},
		)
		for _, arch := range v1beta1.SupportedArchitectures() {
			out = append(out, MetricInfo{Name: prefix + "boundPods." + arch, Unit: UnitCount, Needs: needs,
				Help: "pods bound to " + arch + " nodes before the deadline"})
		}
		for _, os := range OperatingSystems {
			out = append(out, MetricInfo{Name: prefix + "boundPods.os." + os, Unit: UnitCount, Needs: needs,
				Help: "pods bound to " + os + " nodes before the deadline"})
		}
		out = append(out,
			MetricInfo{Name: prefix + "sustainedRate", Unit: UnitRate, Needs: needs, Higher: true, Timing: true, Help: "highest arrival step rate whose total p99 held sustainLatency (arrival mode steps)"},
			MetricInfo{Name: prefix + "cost.cpuPer1kPods", Unit: UnitDuration, Needs: needs, Help: "CPU seconds of every component per 1,000 pods over the pass"},
			MetricInfo{Name: prefix + "cost.relativeCPU", Unit: UnitFactor, Needs: needs, Help: "CPU of every component but the harness in units of the harness's CPU over the pass: at a fixed arrival rate the harness does the same work in every pass, so the figure does not move with the machine's speed"},
			MetricInfo{Name: prefix + "cost.apiWritesPerPod", Unit: UnitFactor, Needs: needs, Help: "apiserver write requests (POST, PUT, PATCH, DELETE) per pod over the pass"},
			MetricInfo{Name: prefix + "cost.apiRequestsPerPod", Unit: UnitFactor, Needs: needs, Help: "apiserver requests per pod over the pass"},
			MetricInfo{Name: prefix + "apiserver.liveHeapAtStart", Unit: UnitBytes, Needs: needs, Help: "kube-apiserver's live heap right after the collection the pass starts with (go_gc_heap_live_bytes): what the passes before left in it"},
			MetricInfo{Name: prefix + "apiserver.allocatedPerPod", Unit: UnitBytes, Needs: needs, Help: "bytes kube-apiserver allocated over the pass per pod (go_gc_heap_allocs_bytes_total)"},
			MetricInfo{Name: prefix + "apiserver.gcCycles", Unit: UnitCount, Needs: needs, Help: "garbage collections kube-apiserver ran during the pass (go_gc_cycles_total_gc_cycles_total)"},
			MetricInfo{Name: prefix + "apiserver.gcCPUPer1kPods", Unit: UnitDuration, Needs: needs, Help: "CPU seconds of kube-apiserver's garbage collector per 1,000 pods over the pass (go_cpu_classes_gc_total_cpu_seconds_total)"},
		)
		for _, c := range CostComponents {
			out = append(out,
				MetricInfo{Name: prefix + "cost.cpuPer1kPods." + c, Unit: UnitDuration, Needs: needs, Help: "CPU seconds of " + c + " per 1,000 pods over the pass"},
				MetricInfo{Name: prefix + "cost.peakRSS." + c, Unit: UnitBytes, Needs: needs, Help: "peak RSS of " + c + " during the pass, summed over its replicas"},
				MetricInfo{Name: prefix + "cost.peakReplicaRSS." + c, Unit: UnitBytes, Needs: needs, Help: "peak RSS of the largest single process (replica) of " + c + " during the pass"},
			)
		}
		if !operatorOff {
			out = append(out,
				MetricInfo{Name: prefix + "inspectionFailedPods", Unit: UnitCount, Needs: NeedsOperator, Help: "pods released with placement=inspection-failed"},
				MetricInfo{Name: prefix + "gateAgeExceededPods", Unit: UnitCount, Needs: NeedsOperator, Help: "pods released with placement=gate-age-exceeded (gated longer than maxGateAge)"},
				MetricInfo{Name: prefix + "noCommonArchPods", Unit: UnitCount, Needs: NeedsOperator, Help: "pods marked placement=no-common-arch"},
				MetricInfo{Name: prefix + "neverGatedPods", Unit: UnitCount, Needs: NeedsOperator, Help: "pods the webhook did not gate (skipped, or webhook down)"},
				MetricInfo{Name: prefix + "execFormatDetectedPods", Unit: UnitCount, Needs: NeedsOperator, Higher: true, Help: "pods with the multiarch.openshift.io/exec-format-error label at the end"},
				MetricInfo{Name: prefix + "execFormatMissedPods", Unit: UnitCount, Needs: NeedsOperator, Help: "misplaced pods without the exec-format-error label at the end"},
				MetricInfo{Name: prefix + "execFormatFalseDetections", Unit: UnitCount, Needs: NeedsOperator, Help: "pods with the exec-format-error label that are not misplaced"},
				MetricInfo{Name: prefix + "fallbackPods", Unit: UnitCount, Needs: NeedsOperator, Help: "pods archgate placed on the fallbackArchitecture because their images could not be inspected (label multiarch.openshift.io/fallback-arch)"},
				MetricInfo{Name: prefix + "placedAtAdmissionPods", Unit: UnitCount, Needs: NeedsOperator, Help: "pods the webhook placed at admission, never gated (every image published by the controller)"},
			)
		}
	}
	pass("", NeedsNothing, false, NeedsOperator)
	pass("baseline.", NeedsBaseline, true, NeedsNothing)
	pass("handwritten.", NeedsHandwritten, true, NeedsNothing)
	pass("floor.", NeedsFloor, true, NeedsFloorGate)
	ratios := []string{"throughput", "schedule.p50", "schedule.p99", "total.p50", "total.p99", "create.p99",
		"start.schedule.p99", "rest.schedule.p99", "start.create.p99", "rest.create.p99",
		"typicalWindow.schedule.p99", "typicalWindow.create.p99",
		"cost.cpuPer1kPods", "cost.relativeCPU", "cost.apiWritesPerPod", "apiserver.allocatedPerPod", "calibration"}
	for _, c := range CostComponents {
		ratios = append(ratios, "cost.cpuPer1kPods."+c)
	}
	for _, m := range ratios {
		timing := !strings.HasPrefix(m, "cost.") && !strings.HasPrefix(m, "apiserver.") && m != "calibration"
		out = append(out,
			MetricInfo{Name: "ratio." + m, Unit: UnitFactor, Needs: NeedsBaseline, Higher: m == "throughput", Timing: timing,
				Help: "main pass " + m + " divided by the baseline's"},
			MetricInfo{Name: "handwrittenRatio." + m, Unit: UnitFactor, Needs: NeedsHandwritten, Higher: m == "throughput", Timing: timing,
				Help: "main pass " + m + " divided by the handwritten-affinity pass's: archgate's own cost, the constraint's cost apart"},
			MetricInfo{Name: "floorRatio." + m, Unit: UnitFactor, Needs: NeedsFloor, Higher: m == "throughput", Timing: timing,
				Help: "main pass " + m + " divided by the floor pass's: archgate's cost beyond what its admission design pays"})
	}
	out = append(out,
		MetricInfo{Name: "ratio.sustainedRate", Unit: UnitFactor, Needs: NeedsBaseline, Higher: true, Help: "main pass sustainedRate divided by the baseline's"},
		MetricInfo{Name: "handwrittenRatio.sustainedRate", Unit: UnitFactor, Needs: NeedsHandwritten, Higher: true, Help: "main pass sustainedRate divided by the handwritten-affinity pass's"},
		MetricInfo{Name: "floorRatio.sustainedRate", Unit: UnitFactor, Needs: NeedsFloor, Higher: true, Help: "main pass sustainedRate divided by the floor pass's"},
		MetricInfo{Name: "ceiling.throughput", Unit: UnitFactor, Needs: NeedsBaseline, Help: "write-bound ceiling of ratio.throughput: W/(W+1), W the baseline's apiserver writes per pod"},
		MetricInfo{Name: "ratio.throughputOfCeiling", Unit: UnitFactor, Needs: NeedsBaseline, Higher: true, Help: "ratio.throughput divided by ceiling.throughput"},
		MetricInfo{Name: "attacker.pods", Unit: UnitCount, Needs: NeedsAttacker, Higher: true, Help: "attack pods created"},
		MetricInfo{Name: "attacker.boundPods", Unit: UnitCount, Needs: NeedsAttacker, Higher: true, Help: "attack pods bound at the end (released by archgate, placed or not)"},
		MetricInfo{Name: "attacker.gatedAtEnd", Unit: UnitCount, Needs: NeedsAttacker, Help: "attack pods still gated at the end"},
		MetricInfo{Name: "attacker.gateHold.max", Unit: UnitDuration, Needs: NeedsAttacker, Help: "longest an attack pod held the gate (to the end for one that kept it)"},
		MetricInfo{Name: "attacker.overMaxGateAge", Unit: UnitCount, Needs: NeedsAttacker, Help: "attack pods that held the gate longer than maxGateAge (+2 s for the watch and the controller)"},
		MetricInfo{Name: "componentRestarts", Unit: UnitCount, Needs: NeedsOperator, Help: "archgate processes that ended on their own during the main pass and were restarted (operator mode)"},
		MetricInfo{Name: "componentOOMKills", Unit: UnitCount, Needs: NeedsOperator, Help: "archgate processes killed over their container's memory limit during the main pass (operator mode)"},
		MetricInfo{Name: "failover.graceful", Unit: UnitDuration, Needs: NeedsOperator, Help: "longest controllerRestart (mode graceful) from the stop to the first gate removed after it"},
		MetricInfo{Name: "failOpen.unregisteredAfter", Unit: UnitDuration, Needs: NeedsOperator, Help: "longest controllerDown or webhookDown (operator mode) from the component going down to the operator removing the webhook registration"},
		MetricInfo{Name: "failOpen.reregisteredAfter", Unit: UnitDuration, Needs: NeedsOperator, Help: "longest controllerDown or webhookDown (operator mode) from the component coming back to the webhook registration's return"},
		MetricInfo{Name: "failover.crash", Unit: UnitDuration, Needs: NeedsOperator, Help: "longest controllerRestart (mode crash) from the SIGKILL to the first gate removed after it"},
		MetricInfo{Name: "cacheHitRate", Unit: UnitRatio, Needs: NeedsOperator, Higher: true, Help: "inspection cache hits / lookups (operator metrics)"},
		MetricInfo{Name: "inspectionErrors", Unit: UnitCount, Needs: NeedsOperator, Help: "failed image inspections (operator metrics)"},
		MetricInfo{Name: "registryRequests", Unit: UnitCount, Needs: NeedsOperator, Help: "requests the registry received"},
		MetricInfo{Name: "registryMinimumRequests", Unit: UnitCount, Needs: NeedsOperator, Help: "minimum: per unique image its manifest (+ config blob when single-platform), + one token per repository with bearer auth"},
		MetricInfo{Name: "registryRequestsPerMinimum", Unit: UnitFactor, Needs: NeedsOperator, Help: "registry requests without the protocol overhead / minimum (1: every image read once)"},
		MetricInfo{Name: "registryProtocolOverhead", Unit: UnitCount, Needs: NeedsOperator, Help: "requests of the client's protocol beyond the minimum: /v2/ pings and tokens beyond one per repository"},
		MetricInfo{Name: "registryOverheadPerImage", Unit: UnitFactor, Needs: NeedsOperator, Help: "registryProtocolOverhead per unique image"},
		MetricInfo{Name: "schedulerSLI.p50", Unit: UnitDuration, Timing: true, Help: "scheduler_pod_scheduling_sli_duration_seconds p50 of the main pass (bucket-interpolated)"},
		MetricInfo{Name: "schedulerSLI.p99", Unit: UnitDuration, Timing: true, Help: "scheduler_pod_scheduling_sli_duration_seconds p99 of the main pass (bucket-interpolated)"},
		MetricInfo{Name: "wallTime", Unit: UnitDuration, Help: "whole run, control-plane start to report"},
		MetricInfo{Name: "cpuTime", Unit: UnitDuration, Help: "CPU time of the simulator process and its control-plane children"},
		MetricInfo{Name: "peakRSS", Unit: UnitBytes, Help: "peak RSS of the simulator process (harness: recorder, load generator, registry; with --in-process also the scheduler and the operator)"},
		MetricInfo{Name: "peakRSSAll", Unit: UnitBytes, Help: "sum of the peak RSS of every process: control plane, components, harness"},
	)
	return out
}

// Metric returns the metric named name.
func Metric(name string) (MetricInfo, bool) {
	i := slices.IndexFunc(metrics(), func(m MetricInfo) bool { return m.Name == name })
	if i < 0 {
		return MetricInfo{}, false
	}
	return metrics()[i], true
}

// Op is a comparison operator of a check.
type Op string

// Comparison operators.
const (
	OpLess         Op = "<"
	OpLessEqual    Op = "<="
	OpGreater      Op = ">"
	OpGreaterEqual Op = ">="
	OpEqual        Op = "=="
	OpNotEqual     Op = "!="
)

// Holds reports whether "got op want" is true.
func (o Op) Holds(got, want float64) bool {
	switch o {
	case OpLess:
		return got < want
	case OpLessEqual:
		return got <= want
	case OpGreater:
		return got > want
	case OpGreaterEqual:
		return got >= want
	case OpEqual:
		return got == want
	case OpNotEqual:
		return got != want
	}
	return false
}

// Check is a parsed expectation.
type Check struct {
	// Metric is the metric checked.
	Metric MetricInfo
	// Op compares the measured value to Value.
	Op Op
	// Value is the threshold in the metric's base unit (seconds, bytes, 0..1).
	Value float64
	// Text is the check as written.
	Text string
	// Source says where the threshold comes from.
	Source string
	// Goal is the value aimed for (Expectation.Goal) in the metric's base
	// unit, GoalSpec that value as written; HasGoal is false when the
	// expectation names none (SetGoal).
	Goal     float64
	GoalSpec string
	HasGoal  bool
}

// GoalText renders the goal as "<op> <value>", in a check's syntax; "" without one.
func (c Check) GoalText() string {
	if !c.HasGoal {
		return ""
	}
	return string(c.Op) + " " + c.GoalSpec
}

// SetGoal sets the goal of c from an expectation's goal, a value in the
// metric's unit (a leading copy of c's operator, as GoalText writes it, is
// allowed). It must be on the strict side of the guard: a goal the guard
// already demands, or one looser than it, says nothing; equality checks have
// no goal apart from their value.
func (c *Check) SetGoal(text string) error {
	spec := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), string(c.Op)))
	v, err := parseValue(c.Metric.Unit, spec)
	if err != nil {
		return err
	}
	switch c.Op {
	case OpLess, OpLessEqual:
		if v >= c.Value {
			return fmt.Errorf("goal %s is not stricter than the check's %s", spec, FormatValue(c.Metric.Unit, c.Value))
		}
	case OpGreater, OpGreaterEqual:
		if v <= c.Value {
			return fmt.Errorf("goal %s is not stricter than the check's %s", spec, FormatValue(c.Metric.Unit, c.Value))
		}
	default:
		return fmt.Errorf("a %s check has no goal apart from its value", c.Op)
	}
	c.Goal, c.GoalSpec, c.HasGoal = v, spec, true
	return nil
}

var checkRE = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9.-]*)\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$`)

// ParseCheck parses "<metric> <op> <value>", e.g. "gateHold.p99 < 200ms",
// "misplacedPods == 0", "cacheHitRate >= 99%", "peakRSSAll < 3Gi".
func ParseCheck(text string) (Check, error) {
	m := checkRE.FindStringSubmatch(text)
	if m == nil {
		return Check{}, fmt.Errorf("want \"<metric> <op> <value>\" with op one of < <= > >= == !=")
	}
	info, ok := Metric(m[1])
	if !ok {
		return Check{}, fmt.Errorf("unknown metric %q%s", m[1], suggestMetric(m[1]))
	}
	v, err := parseValue(info.Unit, m[3])
	if err != nil {
		return Check{}, fmt.Errorf("metric %s: %w", info.Name, err)
	}
	return Check{Metric: info, Op: Op(m[2]), Value: v, Text: strings.TrimSpace(text)}, nil
}

// parseValue parses a threshold in the metric's unit.
func parseValue(u Unit, s string) (float64, error) {
	switch u {
	case UnitDuration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("value %q: want a duration such as 200ms", s)
		}
		return d.Seconds(), nil
	case UnitBytes:
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return 0, fmt.Errorf("value %q: want a size such as 800Mi or 2Gi", s)
		}
		return q.AsApproximateFloat64(), nil
	case UnitRatio:
		if p, ok := strings.CutSuffix(s, "%"); ok {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, fmt.Errorf("value %q: want a number or a percentage", s)
			}
			return f / 100, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		if u == UnitDuration || u == UnitRatio {
			return 0, fmt.Errorf("value %q: want a number or a percentage", s)
		}
		return 0, fmt.Errorf("value %q: want a number", s)
	}
	if u == UnitCount && f != math.Trunc(f) {
		return 0, fmt.Errorf("value %q: want a whole number", s)
	}
	return f, nil
}

// suggestMetric names the metrics closest to a misspelt one: those equal
// but for case, else those at the smallest edit distance (at most 2).
func suggestMetric(name string) string {
	var close []string
	best := 3
	for _, m := range metrics() {
		d := strictyaml.EditDistance(strings.ToLower(m.Name), strings.ToLower(name))
		if strings.EqualFold(m.Name, name) {
			d = 0
		}
		switch {
		case d < best:
			best, close = d, []string{m.Name}
		case d == best:
			close = append(close, m.Name)
		}
	}
	if len(close) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(close, ", "))
}

// ParseFormatted reads back a value FormatValue wrote ("23.8ms", "60.24%",
// "2.21GiB", "50.0/s", "×1.66", "9373"), for pages that keep only the
// formatted figure (the Markdown summaries of older reports).
func ParseFormatted(u Unit, s string) (float64, error) {
	s = strings.TrimSpace(s)
	switch u {
	case UnitBytes:
		s = strings.NewReplacer("GiB", "Gi", "MiB", "Mi", "KiB", "Ki").Replace(s)
	case UnitRate:
		s = strings.TrimSuffix(s, "/s")
	case UnitFactor:
		s = strings.TrimPrefix(s, "×")
	}
	return parseValue(u, s)
}

// FormatValue renders a value of the unit for people: durations in ms or s,
// ratios as percentages, bytes in KiB/MiB/GiB.
func FormatValue(u Unit, v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	switch u {
	case UnitDuration:
		d := time.Duration(v * float64(time.Second))
		switch {
		case d < time.Millisecond:
			return fmt.Sprintf("%.0fµs", v*1e6)
		case d < 10*time.Second:
			return fmt.Sprintf("%.1fms", v*1e3)
		default:
			return fmt.Sprintf("%.1fs", v)
		}
	case UnitRatio:
		return fmt.Sprintf("%.2f%%", v*100)
	case UnitBytes:
		switch {
		case v >= 1<<30:
			return fmt.Sprintf("%.2fGiB", v/(1<<30))
		case v < 1<<20:
			return fmt.Sprintf("%.1fKiB", v/(1<<10))
		}
		return fmt.Sprintf("%.0fMiB", v/(1<<20))
	case UnitRate:
		return fmt.Sprintf("%.1f/s", v)
	case UnitFactor:
		return fmt.Sprintf("×%.2f", v)
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
