package runner

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/recorder"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/workload"
)

const ms = time.Millisecond

// finalPod is a pod as the final list returns it.
func finalPod(i int, node string, gated bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: workload.PodName(i), Labels: map[string]string{}}, Spec: corev1.PodSpec{NodeName: node}}
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}}
		p.Labels[v1beta1.LabelSchedulingGate] = "gated"
	}
	return p
}

// times is a synthetic recorder timeline of one pod; -1 for never.
func times(seen, gated, ungated, bound time.Duration) recorder.PodTimes {
	return recorder.PodTimes{Seen: seen, Gated: gated, Ungated: ungated, Bound: bound}
}

var nodePlatform = map[string]string{"amd-0": "linux/amd64", "arm-0": "linux/arm64"}

// TestSummarizeOutcomes feeds synthetic final states: a known wrong
// placement must count as misplaced, gated and unbound pods must be counted,
// pods Pending by design are reported apart.
func TestSummarizeOutcomes(t *testing.T) {
	amdOnly := workload.Pod{Allowed: []string{"amd64"}}
	noArch := workload.Pod{Allowed: []string{"s390x"}, NoFeasibleArch: true}
	for name, tc := range map[string]struct {
		operator bool
		pods     []workload.Pod
		final    []corev1.Pod
		want     report.Pass
	}{
		"an amd64-only pod on an arm64 node is misplaced": {
			pods:  []workload.Pod{amdOnly, amdOnly},
			final: []corev1.Pod{finalPod(0, "amd-0", false), finalPod(1, "arm-0", false)},
			want:  report.Pass{BoundPods: 2, BoundByArch: map[string]int{"amd64": 1, "arm64": 1}, BoundByOS: map[string]int{"linux": 2}, MisplacedPods: 1, Schedulable: 2},
		},
		"a pod on a node the run did not create is misplaced": {
			pods:  []workload.Pod{amdOnly},
			final: []corev1.Pod{finalPod(0, "elsewhere", false)},
			want:  report.Pass{BoundPods: 1, MisplacedPods: 1, Schedulable: 1},
		},
		"gated and unbound pods are counted, not misplaced": {
			operator: true,
			pods:     []workload.Pod{amdOnly, amdOnly, noArch},
			final:    []corev1.Pod{finalPod(0, "", true), finalPod(1, "amd-0", false), finalPod(2, "", false)},
			want: report.Pass{Operator: true, BoundPods: 1, BoundByArch: map[string]int{"amd64": 1}, BoundByOS: map[string]int{"linux": 1}, GatedAtEnd: 1, UnboundAtEnd: 2, Schedulable: 2,
				PendingByDesign: 1, PendingReason: pendingReason, Placements: map[string]int{"": 3}, NeverGatedPods: 2},
		},
		"without the operator no pod is Pending by design": {
			pods:  []workload.Pod{noArch},
			final: []corev1.Pod{finalPod(0, "amd-0", false)},
			want:  report.Pass{BoundPods: 1, BoundByArch: map[string]int{"amd64": 1}, BoundByOS: map[string]int{"linux": 1}, MisplacedPods: 1, Schedulable: 1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := summaryInput{name: "p", operator: tc.operator, pods: tc.pods, pending: pendingByDesign(tc.pods, tc.operator), nodePlatform: nodePlatform, final: tc.final,
				creates: createTimes{sent: make([]time.Duration, len(tc.pods)), done: make([]time.Duration, len(tc.pods))},
				watch:   recorder.Result{Pods: make([]recorder.PodTimes, len(tc.pods))}}
			for i := range tc.pods {
				in.watch.Pods[i] = times(-1, -1, -1, -1)
			}
			got := summarize(in)
			tc.want.Name, tc.want.Pods = "p", len(tc.pods)
			got.Latency, got.Samples, got.PerSecond, got.CreateSeconds, got.DurationSeconds = nil, report.Samples{}, report.PerSecond{}, 0, 0
			got.StartLatency, got.RestLatency, got.WindowP99, got.Trace = nil, nil, nil, nil
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarizeScheduleLatencyClock checks that schedule latency starts from
// the same kind of point in every pass: the watch delivery at which the pod
// became schedulable (its first event when never gated, the ungate event
// when gated), never the create's answer, which comes from another clock
// path and arrives earlier than the watch.
func TestSummarizeScheduleLatencyClock(t *testing.T) {
	pod := workload.Pod{AnyArch: true}
	for name, tc := range map[string]struct {
		operator     bool
		sent, done   time.Duration
		t            recorder.PodTimes
		wantSchedule int64
		wantGateHold []int64
		wantTotal    int64
	}{
		"baseline: from the first watch event, not the create answer": {
			sent: 0, done: 10 * ms, t: times(15*ms, -1, -1, 40*ms),
			wantSchedule: 25000, wantTotal: 40000,
		},
		"main, gated: from the watch event of the ungate": {
			operator: true, sent: 0, done: 10 * ms, t: times(15*ms, 15*ms, 100*ms, 125*ms),
			wantSchedule: 25000, wantGateHold: []int64{85000}, wantTotal: 125000,
		},
		"main, never gated (webhook skipped): like the baseline": {
			operator: true, sent: 0, done: 10 * ms, t: times(15*ms, -1, -1, 40*ms),
			wantSchedule: 25000, wantTotal: 40000,
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := summaryInput{name: "p", operator: tc.operator, pods: []workload.Pod{pod}, nodePlatform: nodePlatform,
				creates: createTimes{sent: []time.Duration{tc.sent}, done: []time.Duration{tc.done}},
				watch:   recorder.Result{Pods: []recorder.PodTimes{tc.t}},
				final:   []corev1.Pod{finalPod(0, "amd-0", false)}}
			s := summarize(in).Samples
			want := report.Samples{Schedule: []int64{tc.wantSchedule}, Total: []int64{tc.wantTotal}, Create: []int64{10000}, GateHold: tc.wantGateHold}
			if diff := cmp.Diff(want, s); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarizeTrace checks each pod's timeline in the raw series: every
// transition in microseconds from the epoch, -1 for what never happened, a
// pod whose create was never sent with no create times either.
func TestSummarizeTrace(t *testing.T) {
	pods := []workload.Pod{{AnyArch: true}, {AnyArch: true}, {AnyArch: true}}
	in := summaryInput{name: "p", operator: true, pods: pods, nodePlatform: nodePlatform,
		creates: createTimes{sent: []time.Duration{1 * ms, 2 * ms, -1}, done: []time.Duration{5 * ms, 7 * ms, 0}},
		watch:   recorder.Result{Pods: []recorder.PodTimes{times(6*ms, 6*ms, 20*ms, 30*ms), times(8*ms, -1, -1, 12*ms), times(-1, -1, -1, -1)}},
		final:   []corev1.Pod{finalPod(0, "amd-0", false), finalPod(1, "amd-0", false), finalPod(2, "", false)}}
	want := []report.PodTrace{
		{Sent: 1000, Created: 5000, Seen: 6000, Gated: 6000, Ungated: 20000, Bound: 30000},
		{Sent: 2000, Created: 7000, Seen: 8000, Gated: -1, Ungated: -1, Bound: 12000},
		{Sent: -1, Created: -1, Seen: -1, Gated: -1, Ungated: -1, Bound: -1},
	}
	if diff := cmp.Diff(want, summarize(in).Trace); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

// TestSummarizeUnboundPodsLeaveNoLatency checks the survivorship the
// verdict guards against: a pod that never bound has no schedule or total
// sample, so it must show in UnboundAtEnd.
func TestSummarizeUnboundPodsLeaveNoLatency(t *testing.T) {
	pods := []workload.Pod{{AnyArch: true}, {AnyArch: true}}
	in := summaryInput{name: "p", operator: true, pods: pods, nodePlatform: nodePlatform,
		creates: createTimes{sent: []time.Duration{0, 0}, done: []time.Duration{5 * ms, 5 * ms}},
		watch:   recorder.Result{Pods: []recorder.PodTimes{times(6*ms, 6*ms, 20*ms, 30*ms), times(6*ms, 6*ms, -1, -1)}},
		final:   []corev1.Pod{finalPod(0, "amd-0", false), finalPod(1, "", true)}}
	p := summarize(in)
	if len(p.Samples.Schedule) != 1 || len(p.Samples.Total) != 1 || p.UnboundAtEnd != 1 || p.GatedAtEnd != 1 {
		t.Errorf("schedule %v total %v unbound %d gated %d, want one sample each and the other pod unbound and gated",
			p.Samples.Schedule, p.Samples.Total, p.UnboundAtEnd, p.GatedAtEnd)
	}
}

func TestCompleteFailovers(t *testing.T) {
	pods := []recorder.PodTimes{times(0, 0, 1*time.Second, -1), times(0, 0, 12*time.Second, -1), times(0, 0, 13*time.Second, -1)}
	for name, tc := range map[string]struct {
		fo        report.Failover
		wantFo    report.Failover
		wantError bool
	}{
		"crash: resumes at the first gate removal after the takeover": {
			fo:     report.Failover{Mode: "crash", Replicas: 2, StoppedAt: 2, AcquiredAt: 11.5},
			wantFo: report.Failover{Mode: "crash", Replicas: 2, StoppedAt: 2, AcquiredAt: 11.5, ResumedAt: 12, Seconds: 10},
		},
		"no gate removed after the takeover": {
			fo:        report.Failover{Mode: "graceful", Replicas: 2, StoppedAt: 14, AcquiredAt: 14.1},
			wantFo:    report.Failover{Mode: "graceful", Replicas: 2, StoppedAt: 14, AcquiredAt: 14.1, ResumedAt: -1},
			wantError: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			fo := tc.fo
			events := []report.AppliedEvent{{Action: "controllerRestart", Failover: &fo}}
			completeFailovers(events, pods)
			if diff := cmp.Diff(tc.wantFo, fo); diff != "" {
				t.Errorf("failover (-want +got):\n%s", diff)
			}
			if (events[0].Error != "") != tc.wantError {
				t.Errorf("error %q, want error %v", events[0].Error, tc.wantError)
			}
		})
	}
}

func TestCompleteWebhookDowns(t *testing.T) {
	pods := []workload.Pod{{}, {}, {NodeSelectorArch: "amd64"}}
	for name, tc := range map[string]struct {
		times      []recorder.PodTimes
		wantEffect string
		wantError  bool
	}{
		"a pod admitted ungated in the window": {
			times:      []recorder.PodTimes{times(3*time.Second, -1, -1, -1), times(3*time.Second, 3*time.Second, -1, -1), times(-1, -1, -1, -1)},
			wantEffect: "1 pods admitted ungated",
		},
		"only gated pods and a pinned one in the window": {
			times:     []recorder.PodTimes{times(1*time.Second, -1, -1, -1), times(3*time.Second, 3*time.Second, -1, -1), times(3*time.Second, -1, -1, -1)},
			wantError: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			events := []report.AppliedEvent{{Action: "webhookDown", AtSeconds: 2, EndSeconds: 4}}
			completeWebhookDowns(events, tc.times, pods)
			if events[0].Effect != tc.wantEffect || (events[0].Error != "") != tc.wantError {
				t.Errorf("effect %q error %q, want effect %q error %v", events[0].Effect, events[0].Error, tc.wantEffect, tc.wantError)
			}
		})
	}
}

// TestSummarizeExecFormat feeds the monitor's labels at the end: a labelled
// misplaced pod is detected, an unlabelled one missed, a labelled pod that
// runs on its node a false detection; latency runs from the error's status
// to the label.
func TestSummarizeExecFormat(t *testing.T) {
	amdOnly := workload.Pod{Allowed: []string{"amd64"}}
	labelled := func(i int, node string) corev1.Pod {
		p := finalPod(i, node, false)
		p.Labels[v1beta1.LabelExecFormatError] = v1beta1.LabelValueTrue
		return p
	}
	pods := []workload.Pod{amdOnly, amdOnly, amdOnly, amdOnly}
	final := []corev1.Pod{labelled(0, "arm-0"), finalPod(1, "arm-0", false), labelled(2, "amd-0"), finalPod(3, "amd-0", false)}
	watch := make([]recorder.PodTimes, len(pods))
	for i := range watch {
		watch[i] = times(0, -1, -1, 10*ms)
		watch[i].ExecFormatReported, watch[i].ExecFormatLabelled = -1, -1
	}
	watch[0].ExecFormatReported, watch[0].ExecFormatLabelled = 20*ms, 70*ms
	in := summaryInput{name: "p", operator: true, pods: pods, nodePlatform: nodePlatform, final: final,
		creates: createTimes{sent: make([]time.Duration, len(pods)), done: make([]time.Duration, len(pods))},
		watch:   recorder.Result{Pods: watch}, execFormat: &report.ExecFormat{ReportedPods: 2, Monitor: true}}
	p := summarize(in)
	want := &report.ExecFormat{ReportedPods: 2, Monitor: true, DetectedPods: 2, MissedPods: 1, FalseDetections: 1}
	if diff := cmp.Diff(want, p.ExecFormat); diff != "" {
		t.Errorf("exec format outcomes (-want +got):\n%s", diff)
	}
	if s := p.Latency["execFormatDetection"]; s.N != 1 || s.Max != 0.05 {
		t.Errorf("execFormatDetection latency %+v, want one sample of 50ms", s)
	}
}

// TestSummarizeStartApart checks that the pods created in the pass's first
// report.StartWindow are summarised apart from the rest, and that the
// whole-pass figures still hold every pod.
func TestSummarizeStartApart(t *testing.T) {
	amdOnly := workload.Pod{Allowed: []string{"amd64"}}
	pods := []workload.Pod{amdOnly, amdOnly, amdOnly}
	sent := []time.Duration{time.Second, 9 * time.Second, 30 * time.Second}
	in := summaryInput{name: "p", pods: pods, pending: make([]bool, len(pods)), nodePlatform: map[string]string{"n": "linux/amd64"},
		creates: createTimes{sent: sent, done: []time.Duration{sent[0] + 500*time.Millisecond, sent[1] + 400*time.Millisecond, sent[2] + 10*time.Millisecond}},
		watch:   recorder.Result{Pods: make([]recorder.PodTimes, len(pods))}}
	for i := range pods {
		in.watch.Pods[i] = times(-1, -1, -1, -1)
	}
	p := summarize(in)
	if got := p.Latency["create"].N; got != 3 {
		t.Errorf("whole pass: %d creates, want 3", got)
	}
	if got := p.StartLatency["create"]; got.N != 2 || got.Max != 0.5 {
		t.Errorf("first %s: %+v, want 2 creates up to 500ms", report.StartWindow, got)
	}
	if got := p.RestLatency["create"]; got.N != 1 || got.Max != 0.01 {
		t.Errorf("after %s: %+v, want 1 create of 10ms", report.StartWindow, got)
	}
}

// TestSummarizeWindows checks that a pass's start is judged against a typical later 10-s
// window of the same pass: the median of the later windows' p99s, windows of fewer than
// report.MinWindowPods pods left out, and no penalty without two such windows.
func TestSummarizeWindows(t *testing.T) {
	// window is n pods sent in the 10-s window that starts at index·10 s, each answered after d.
	type window struct {
		n int
		d time.Duration
	}
	for _, tc := range []struct {
		name        string
		windows     []window
		wantWindows int
		wantTypical float64
		wantPenalty float64 // 0: none
	}{
		{"start slower than a typical window", []window{{100, 50 * time.Millisecond}, {100, 10 * time.Millisecond},
			{100, 30 * time.Millisecond}, {100, 20 * time.Millisecond}, {report.MinWindowPods - 1, time.Second}}, 3, 0.02, 2.5},
		{"start as quiet as the rest", []window{{100, 10 * time.Millisecond}, {100, 20 * time.Millisecond},
			{100, 20 * time.Millisecond}, {100, 40 * time.Millisecond}}, 3, 0.02, 0.5},
		{"one later window is no typical one", []window{{100, 10 * time.Millisecond}, {100, 20 * time.Millisecond}}, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent, done []time.Duration
			for w, win := range tc.windows {
				for i := range win.n {
					at := time.Duration(w)*report.StartWindow + time.Duration(i)*report.StartWindow/time.Duration(win.n)
					sent, done = append(sent, at), append(done, at+win.d)
				}
			}
			pods := make([]workload.Pod, len(sent))
			in := summaryInput{name: "p", pods: pods, pending: make([]bool, len(pods)), creates: createTimes{sent: sent, done: done},
				watch: recorder.Result{Pods: make([]recorder.PodTimes, len(pods))}}
			for i := range pods {
				in.watch.Pods[i] = times(-1, -1, -1, -1)
			}
			p := summarize(in)
			if got := p.WindowP99["create"].N; got != tc.wantWindows {
				t.Errorf("%d later windows counted, want %d", got, tc.wantWindows)
			}
			typical, ok := p.TypicalWindowP99("create")
			penalty, pok := p.StartPenalty("create")
			switch {
			case tc.wantPenalty == 0 && (ok || pok):
				t.Errorf("typical window %v, start penalty ×%.2f, want none", typical, penalty)
			case tc.wantPenalty != 0 && (!ok || !pok || math.Abs(typical-tc.wantTypical) > 1e-9 || math.Abs(penalty-tc.wantPenalty) > 1e-9):
				t.Errorf("typical window %v (%v), start penalty ×%v (%v), want %v and ×%v", typical, ok, penalty, pok, tc.wantTypical, tc.wantPenalty)
			}
		})
	}
}

// TestSummarizeAttacker checks the attacker's figures: pods not created are
// planned but not counted, a pod still gated holds the gate to the end of
// the pass, and only holds beyond maxGateAge and its grace count as over.
func TestSummarizeAttacker(t *testing.T) {
	const s = time.Second
	hang, tarpit := workload.Pod{Attack: "hang"}, workload.Pod{Attack: "tarpit"}
	pods := []workload.Pod{hang, hang, tarpit, tarpit, hang}
	tt := []recorder.PodTimes{
		times(1*s, 1*s, 30*s, 31*s), // released well within the age
		times(2*s, 2*s, 63*s, 64*s), // 61 s: past 60 s, within the 2 s grace
		times(3*s, 3*s, 70*s, 71*s), // 67 s: over
		times(4*s, 4*s, -1, -1),     // still gated at the end (80 s): 76 s, over
		times(-1, -1, -1, -1),       // never created
	}
	sent := []time.Duration{0, 1 * s, 2 * s, 3 * s, -1}
	got := summarizeAttacker(pods, tt, sent, 80*s, time.Minute)
	want := &report.Attacker{Planned: map[string]int{"hang": 3, "tarpit": 2}, Pods: 4, BoundPods: 3, GatedAtEnd: 1,
		GateHoldMaxSeconds: 76, MaxGateAgeSeconds: 60, OverMaxGateAge: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attacker (-want +got):\n%s", diff)
	}
}

// TestMisplacedByPlatform: a node's operating system counts as much as its architecture.
func TestMisplacedByPlatform(t *testing.T) {
	linuxAmd := workload.Pod{Allowed: []string{"amd64"}, Platforms: []string{"linux/amd64"}}
	windowsAmd := workload.Pod{Platforms: []string{"windows/amd64"}}
	multiOS := workload.Pod{Allowed: []string{"amd64"}, Platforms: []string{"linux/amd64", "windows/amd64"}}
	in := summaryInput{pods: []workload.Pod{linuxAmd, windowsAmd, multiOS},
		nodePlatform: map[string]string{"lin": "linux/amd64", "win": "windows/amd64"}}
	for _, tc := range []struct {
		pod  int
		node string
		want bool
	}{
		{0, "lin", false}, {0, "win", true}, {1, "win", false}, {1, "lin", true}, {2, "lin", false}, {2, "win", false}, {2, "unknown", true},
	} {
		if got := in.misplaced(tc.pod, tc.node); got != tc.want {
			t.Errorf("pod %d on %s: misplaced = %t, want %t", tc.pod, tc.node, got, tc.want)
		}
	}
}
