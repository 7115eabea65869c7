package runner

import (
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/recorder"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// pendingReason says why a pass's PendingByDesign pods may stay Pending.
const pendingReason = "images share no architecture with any node pool"

// createTimes are the creators' times of each pod (offsets from the pass's
// epoch), -1 when the create was not sent or failed.
type createTimes struct {
	sent, done []time.Duration
	lagMax     time.Duration
}

// summaryInput is everything a pass measured.
type summaryInput struct {
	name     string
	operator bool
	pods     []workload.Pod
	// pending marks the pods allowed to end Pending (pendingByDesign).
	pending []bool
	// nodePlatform is each node's "os/arch".
	nodePlatform map[string]string
	arrival      scenario.ArrivalSpec
	creates      createTimes
	watch        recorder.Result
	// final is the pass's pods as the apiserver listed them at the end.
	final []corev1.Pod
	// execFormat is set when the fake kubelets reported exec format errors.
	execFormat *report.ExecFormat
}

// pendingByDesign marks the pods allowed to end Pending: when the pass
// places pods by architecture (the operator, or the handwritten affinity),
// those whose images share no architecture with any node pool are kept off
// every node; otherwise nothing keeps a pod off a node.
func pendingByDesign(pods []workload.Pod, placed bool) []bool {
	out := make([]bool, len(pods))
	for i, p := range pods {
		out[i] = placed && p.NoFeasibleArch
	}
	return out
}

// summarize turns a pass's measurements into its figures. Latencies start
// from watch deliveries in every pass: schedule latency runs from the first
// watch event at which the pod is schedulable (its first event if it was
// never gated, the event without the gate otherwise) to the event with its
// node, so that a main pass and a baseline measure the same span.
func summarize(in summaryInput) *report.Pass {
	p := &report.Pass{
		Name:        in.name,
		Operator:    in.operator,
		Schedulable: len(in.pods),
		Latency:     map[string]stats.Summary{},
		Recorder:    report.RecorderStats{Events: in.watch.Events, Drops: in.watch.Drops},
	}
	for _, pending := range in.pending {
		if pending {
			p.PendingByDesign++
			p.Schedulable--
		}
	}
	if p.PendingByDesign > 0 {
		p.PendingReason = pendingReason
	}
	p.ArrivalLagMaxSeconds = max(in.creates.lagMax, 0).Seconds()
	outcomes(p, in)
	p.Samples = samples(in, func(time.Duration) bool { return true })
	p.Trace = trace(in)
	p.Latency = latencies(p.Samples)
	p.StartLatency = latencies(samples(in, func(sent time.Duration) bool { return sent < report.StartWindow }))
	p.RestLatency = latencies(samples(in, func(sent time.Duration) bool { return sent >= report.StartWindow }))
	p.WindowP99 = windowP99(in)
	if a := in.arrival; a.Mode == scenario.ArrivalSteps {
		p.Steps, p.SustainedRate = stepStats(a.Steps, workload.Arrivals(a, len(in.pods)), totals(in), a.SustainLatency.D())
	}
	durations(p, in)
	if in.execFormat != nil {
		p.ExecFormat = execFormatOutcomes(*in.execFormat, in)
		if xs := execFormatDetections(in.watch.Pods); len(xs) > 0 {
			p.Latency["execFormatDetection"] = stats.Summarize(xs)
		}
	}
	return p
}

// summarizeAttacker says what became of the attacker's pods from their
// watch and create times (by the same index), the end of the pass (an
// offset like them) and the cluster's maxGateAge. A pod's gate hold runs
// from its first event with the gate to the first without, or to the end
// of the pass when it kept it.
func summarizeAttacker(pods []workload.Pod, times []recorder.PodTimes, sent []time.Duration, end, maxGateAge time.Duration) *report.Attacker {
	a := &report.Attacker{Planned: map[string]int{}, MaxGateAgeSeconds: maxGateAge.Seconds()}
	for i, p := range pods {
		a.Planned[string(p.Attack)]++
		if sent[i] < 0 {
			continue
		}
		a.Pods++
		t := times[i]
		if t.Bound >= 0 {
			a.BoundPods++
		}
		if t.Gated < 0 {
			continue
		}
		until := t.Ungated
		if until < 0 {
			a.GatedAtEnd++
			until = end
		}
		hold := max(until-t.Gated, 0).Seconds()
		a.GateHoldMaxSeconds = max(a.GateHoldMaxSeconds, hold)
		if hold > a.MaxGateAgeSeconds+report.GateAgeGraceSeconds {
			a.OverMaxGateAge++
		}
	}
	return a
}

// misplaced reports whether pod i, bound to node, cannot run there.
func (in summaryInput) misplaced(i int, node string) bool {
	platform, ok := in.nodePlatform[node]
	return !ok || !in.pods[i].RunsOn(platform)
}

// execFormatOutcomes completes the kubelet's counts with the monitor's
// detections at the end: labelled pods, misplaced pods left unlabelled,
// labelled pods that are not misplaced.
func execFormatOutcomes(x report.ExecFormat, in summaryInput) *report.ExecFormat {
	for _, pod := range in.final {
		i, ok := workload.PodIndex(pod.Name)
		if !ok || i >= len(in.pods) || pod.Spec.NodeName == "" {
			continue
		}
		labelled := pod.Labels[v1beta1.LabelExecFormatError] == v1beta1.LabelValueTrue
		misplaced := in.misplaced(i, pod.Spec.NodeName)
		switch {
		case labelled && misplaced:
			x.DetectedPods++
		case labelled:
			x.DetectedPods++
			x.FalseDetections++
		case misplaced:
			x.MissedPods++
		}
	}
	return &x
}

// execFormatDetections are the detection latencies in seconds: the watch's
// first status reporting the error → its first event with the label.
func execFormatDetections(pods []recorder.PodTimes) []float64 {
	var out []float64
	for _, t := range pods {
		if t.ExecFormatReported >= 0 && t.ExecFormatLabelled >= 0 {
			out = append(out, max(t.ExecFormatLabelled-t.ExecFormatReported, 0).Seconds())
		}
	}
	return out
}

// outcomes counts the final states: bound, misplaced (bound to a node whose
// architecture some image of the pod lacks), gated, unbound, placements.
func outcomes(p *report.Pass, in summaryInput) {
	p.Placements = map[string]int{}
	for _, pod := range in.final {
		i, ok := workload.PodIndex(pod.Name)
		if !ok || i >= len(in.pods) {
			continue
		}
		if v1beta1.HasSchedulingGate(&pod.Spec) {
			p.GatedAtEnd++
		}
		if in.operator {
			p.Placements[pod.Labels[v1beta1.LabelPlacement]]++
			if _, ok := pod.Labels[v1beta1.LabelFallbackArchitecture]; ok {
				p.FallbackPods++
			}
			switch v, gated := pod.Labels[v1beta1.LabelSchedulingGate]; {
			case !gated:
				p.NeverGatedPods++
			case v == v1beta1.LabelValueAdmission:
				p.PlacedAtAdmissionPods++
			}
		}
		if pod.Spec.NodeName == "" {
			p.UnboundAtEnd++
			continue
		}
		p.BoundPods++
		if platform, ok := in.nodePlatform[pod.Spec.NodeName]; ok {
			if p.BoundByArch == nil {
				p.BoundByArch, p.BoundByOS = map[string]int{}, map[string]int{}
			}
			os, arch, _ := strings.Cut(platform, "/")
			p.BoundByArch[arch]++
			p.BoundByOS[os]++
		}
		if in.misplaced(i, pod.Spec.NodeName) {
			p.MisplacedPods++
		}
	}
	if len(p.Placements) == 0 {
		p.Placements = nil
	}
}

// samples are the per-pod latencies in microseconds of the pods whose
// create was sent at an offset sentIn accepts, pods in index order.
func samples(in summaryInput, sentIn func(time.Duration) bool) report.Samples {
	us := func(d time.Duration) int64 { return max(d, 0).Microseconds() }
	var s report.Samples
	c := in.creates
	for i := range in.pods {
		if c.sent[i] < 0 || !sentIn(c.sent[i]) {
			continue
		}
		t := in.watch.Pods[i]
		s.Create = append(s.Create, us(c.done[i]-c.sent[i]))
		from := t.Seen
		if t.Gated >= 0 && t.Ungated >= 0 {
			s.GateHold = append(s.GateHold, us(t.Ungated-t.Gated))
			from = t.Ungated
		}
		if t.Bound >= 0 {
			if from >= 0 {
				s.Schedule = append(s.Schedule, us(t.Bound-from))
			}
			s.Total = append(s.Total, us(t.Bound-c.sent[i]))
		}
	}
	return s
}

// trace is each pod's timeline, pods in index order.
func trace(in summaryInput) []report.PodTrace {
	us := func(d time.Duration) int64 {
		if d < 0 {
			return -1
		}
		return d.Microseconds()
	}
	out := make([]report.PodTrace, len(in.pods))
	for i := range in.pods {
		t := in.watch.Pods[i]
		created := in.creates.done[i]
		if in.creates.sent[i] < 0 {
			created = -1
		}
		out[i] = report.PodTrace{Sent: us(in.creates.sent[i]), Created: us(created), Seen: us(t.Seen),
			Gated: us(t.Gated), Ungated: us(t.Ungated), Bound: us(t.Bound)}
	}
	return out
}

// latencies summarises each latency family of s that has samples.
func latencies(s report.Samples) map[string]stats.Summary {
	out := map[string]stats.Summary{}
	for _, fam := range []string{"gateHold", "schedule", "total", "create"} {
		if xs := s.Seconds(fam); len(xs) > 0 {
			out[fam] = stats.Summarize(xs)
		}
	}
	return out
}

// windowP99 is the spread of the p99s of the pass's StartWindow-long windows after the first,
// for create and schedule latency; windows with fewer than report.MinWindowPods pods are left
// out.
func windowP99(in summaryInput) map[string]stats.Summary {
	var last time.Duration
	for _, sent := range in.creates.sent {
		last = max(last, sent)
	}
	p99s := map[string][]float64{}
	for start := report.StartWindow; start <= last; start += report.StartWindow {
		s := samples(in, func(sent time.Duration) bool { return sent >= start && sent < start+report.StartWindow })
		for _, fam := range scenario.WindowFamilies {
			if xs := s.Seconds(fam); len(xs) >= report.MinWindowPods {
				p99s[fam] = append(p99s[fam], stats.Summarize(xs).P99)
			}
		}
	}
	out := map[string]stats.Summary{}
	for fam, xs := range p99s {
		out[fam] = stats.Summarize(xs)
	}
	return out
}

// totals are each pod's create-to-bound latency, -1 when it did not bind.
func totals(in summaryInput) []time.Duration {
	out := make([]time.Duration, len(in.pods))
	for i := range in.pods {
		out[i] = -1
		if b := in.watch.Pods[i].Bound; b >= 0 && in.creates.sent[i] >= 0 {
			out[i] = b - in.creates.sent[i]
		}
	}
	return out
}

// durations sets the pass's span (first create sent → last bound), its
// throughput and the per-second counts.
func durations(p *report.Pass, in summaryInput) {
	var first, lastCreate, lastBound time.Duration = -1, -1, -1
	for i := range in.pods {
		sent := in.creates.sent[i]
		if sent < 0 {
			continue
		}
		p.Pods++
		if first < 0 || sent < first {
			first = sent
		}
		lastCreate = max(lastCreate, sent)
		if b := in.watch.Pods[i].Bound; b >= 0 {
			lastBound = max(lastBound, b)
		}
	}
	if first < 0 {
		return
	}
	p.CreateSeconds = (lastCreate - first).Seconds()
	end := lastBound
	if end < 0 {
		end = lastCreate
	}
	p.DurationSeconds = (end - first).Seconds()
	if p.DurationSeconds > 0 {
		p.Throughput = float64(p.BoundPods) / p.DurationSeconds
	}
	p.PerSecond = perSecond(in, first, end)
}

// perSecond buckets creates, gate removals and binds by second since the
// first create.
func perSecond(in summaryInput, first, end time.Duration) report.PerSecond {
	n := int(math.Ceil((end - first).Seconds())) + 1
	ps := report.PerSecond{Created: make([]int, n), Ungated: make([]int, n), Bound: make([]int, n)}
	bucket := func(counts []int, t time.Duration) {
		if t < first {
			return
		}
		if k := int((t - first) / time.Second); k < len(counts) {
			counts[k]++
		}
	}
	for i, t := range in.watch.Pods {
		if in.creates.sent[i] >= 0 {
			bucket(ps.Created, in.creates.sent[i])
		}
		if t.Ungated >= 0 {
			bucket(ps.Ungated, t.Ungated)
		}
		if t.Bound >= 0 {
			bucket(ps.Bound, t.Bound)
		}
	}
	return ps
}
