package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/recorder"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// passSpec says how to run one pass.
type passSpec struct {
	name     string
	operator bool
	timeline []scenario.Event
}

// creates holds the creators' times of each pod (offsets from the epoch),
// -1 when the create failed.
type creates struct {
	sent, done []time.Duration
	lagMax     atomic.Int64
	finished   atomic.Int64
	failed     atomic.Int64
	firstErr   atomic.Pointer[error]
}

// namespaces returns the names of the pass's namespaces.
func (r *run) namespaces(pass string) []string {
	out := make([]string, r.s.Workload.Namespaces)
	for i := range out {
		out[i] = fmt.Sprintf("sim-%s-%s-%d", r.id, pass, i)
	}
	return out
}

func (r *run) selector(pass string) string {
	return workload.LabelRun + "=" + r.id + "," + workload.LabelPass + "=" + pass
}

// runPass creates the workload at its arrival pattern, applies the timeline
// and waits until the pods are bound or the deadline passes.
func (r *run) runPass(ctx context.Context, spec passSpec) (*report.Pass, error) {
	nss := r.namespaces(spec.name)
	if err := r.createNamespaces(ctx, nss, spec.operator); err != nil {
		return nil, err
	}
	pods := r.plan.Pods
	objOpts := workload.ObjectOptions{
		Host:       r.registryHost(),
		Namespaces: nss,
		Labels:     map[string]string{workload.LabelRun: r.id, workload.LabelPass: spec.name},
		CPU:        *r.s.Workload.Requests.CPU,
		Memory:     *r.s.Workload.Requests.Memory,
	}
	sliBefore := r.schedulerSLI(ctx)
	costStart := r.markCost(ctx)
	stopProfiles := r.startProfiles(ctx, spec.name)
	epoch := time.Now()
	rec, err := recorder.Start(ctx, recorder.Options{Client: r.client, Selector: r.selector(spec.name), Pods: len(pods), Epoch: epoch})
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			rec.Stop()
		}
	}()
	if r.op != nil && spec.operator {
		r.op.resetCounters()
	}

	passCtx, cancelPass := context.WithCancel(ctx)
	defer cancelPass()
	c := &creates{sent: make([]time.Duration, len(pods)), done: make([]time.Duration, len(pods))}
	var wg sync.WaitGroup
	wg.Go(func() { r.create(passCtx, epoch, pods, objOpts, c) })
	var tl *timeline
	if spec.operator && len(spec.timeline) > 0 {
		tl = r.startTimeline(passCtx, epoch, spec.timeline)
	}

	expected := len(pods)
	if spec.operator {
		expected = r.plan.Schedulable
	}
	deadline := epoch.Add(r.s.Deadline.D())
	prog := newProgress(r.opts.Progress, spec.name, len(pods), epoch)
	deadlineHit := false
	var waitErr error
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		p := rec.Progress()
		done := c.finished.Load()
		prog.update(done, p)
		if done == int64(len(pods)) && p.Bound >= int64(expected-int(c.failed.Load())) {
			break
		}
		select {
		case <-ctx.Done():
			waitErr = ctx.Err()
			break wait
		case <-tick.C:
		case <-rec.Changed():
		}
		if time.Now().After(deadline) {
			deadlineHit = true
			break
		}
		if r.op != nil {
			if err := r.op.err(); err != nil {
				waitErr = err
				break
			}
		}
	}
	prog.finish()
	cancelPass()
	wg.Wait()
	costEnd := r.markCost(context.WithoutCancel(ctx))
	stopProfiles()
	var applied []report.AppliedEvent
	if tl != nil {
		applied = tl.stop()
	}
	res := rec.Stop()
	stopped = true
	r.rep.Timeline = append(r.rep.Timeline, applied...)
	if waitErr != nil && errors.Is(waitErr, context.Canceled) {
		return nil, waitErr
	}

	// The final state comes from the apiserver, not the watch: it is exact
	// even if the recorder dropped events.
	final, err := r.listPods(context.WithoutCancel(ctx), spec.name)
	if err != nil {
		return nil, err
	}
	p := r.summarize(spec, c, res, final)
	p.DeadlineHit = deadlineHit
	p.SchedulerSLI = sliDelta(sliBefore, r.schedulerSLI(context.WithoutCancel(ctx)))
	p.Cost = r.cost(costStart, costEnd, r.sampler.Samples(), p.Pods)
	if res.Err != nil {
		r.rep.Errors = append(r.rep.Errors, fmt.Sprintf("%s pass: %v", spec.name, res.Err))
	}
	if e := c.firstErr.Load(); e != nil {
		r.rep.Errors = append(r.rep.Errors, fmt.Sprintf("%s pass: %d creates failed, first: %v", spec.name, c.failed.Load(), *e))
	}
	return p, waitErr
}

// create paces the creates at the arrival pattern with a bounded number of
// requests in flight.
func (r *run) create(ctx context.Context, epoch time.Time, pods []workload.Pod, o workload.ObjectOptions, c *creates) {
	arrivals := workload.Arrivals(r.s.Workload.Arrival, len(pods))
	queue := make(chan int, r.s.Workload.Arrival.Concurrency)
	var wg sync.WaitGroup
	for range r.s.Workload.Arrival.Concurrency {
		wg.Go(func() {
			for i := range queue {
				c.sent[i] = time.Since(epoch)
				lag := c.sent[i] - arrivals[i]
				for old := c.lagMax.Load(); int64(lag) > old && !c.lagMax.CompareAndSwap(old, int64(lag)); old = c.lagMax.Load() {
				}
				if err := r.createPod(ctx, pods[i].Object(o)); err != nil {
					c.done[i], c.sent[i] = -1, -1
					c.failed.Add(1)
					c.firstErr.CompareAndSwap(nil, &err)
				} else {
					c.done[i] = time.Since(epoch)
				}
				c.finished.Add(1)
			}
		})
	}
	for i := range pods {
		if d := time.Until(epoch.Add(arrivals[i])); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			for j := i; j < len(pods); j++ {
				c.sent[j], c.done[j] = -1, -1
			}
			break
		}
		queue <- i
	}
	close(queue)
	wg.Wait()
}

// createPod creates a pod, retrying briefly on errors a busy apiserver
// returns (timeouts, 429, 5xx).
func (r *run) createPod(ctx context.Context, pod *corev1.Pod) error {
	var err error
	for attempt := range 5 {
		_, err = r.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if !(apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
	}
	return err
}

// createNamespaces creates the pass's namespaces, with the pull secret and
// the PodPlacementConfigs when the operator runs.
func (r *run) createNamespaces(ctx context.Context, nss []string, operator bool) error {
	for i, name := range nss {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{workload.LabelRun: r.id}}}
		if _, err := r.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
		if operator && r.op != nil {
			if err := r.op.prepareNamespace(ctx, name, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// listPods lists the pass's pods, paginated.
func (r *run) listPods(ctx context.Context, pass string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{LabelSelector: r.selector(pass), Limit: 2000}
	for {
		list, err := r.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the %s pass's pods: %w", pass, err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// deletePassPods removes a pass's pods so the next pass starts on empty
// nodes (envtest runs no namespace controller, so deleting the namespace
// would leave them).
func (r *run) deletePassPods(ctx context.Context, pass string) error {
	for _, ns := range r.namespaces(pass) {
		err := r.client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0),
			metav1.ListOptions{LabelSelector: r.selector(pass)})
		if err != nil {
			return fmt.Errorf("deleting the %s pass's pods: %w", pass, err)
		}
	}
	return nil
}

// summarize turns the recorder's times and the final pod list into the
// pass's figures.
func (r *run) summarize(spec passSpec, c *creates, res recorder.Result, final []corev1.Pod) *report.Pass {
	pods := r.plan.Pods
	p := &report.Pass{
		Name:        spec.name,
		Operator:    spec.operator,
		Schedulable: r.plan.Schedulable,
		Placements:  map[string]int{},
		Latency:     map[string]stats.Summary{},
		Recorder:    report.RecorderStats{Events: res.Events, Drops: res.Drops},
	}
	if !spec.operator {
		p.Schedulable = len(pods)
	}
	p.ArrivalLagMaxSeconds = max(time.Duration(c.lagMax.Load()), 0).Seconds()
	var first, lastCreate, lastBound time.Duration = -1, -1, -1
	for i := range pods {
		if c.sent[i] < 0 {
			continue
		}
		p.Pods++
		if first < 0 || c.sent[i] < first {
			first = c.sent[i]
		}
		lastCreate = max(lastCreate, c.sent[i])
		if b := res.Pods[i].Bound; b >= 0 {
			lastBound = max(lastBound, b)
		}
	}
	for _, pod := range final {
		i, ok := workload.PodIndex(pod.Name)
		if !ok || i >= len(pods) {
			continue
		}
		if v1beta1.HasSchedulingGate(&pod.Spec) {
			p.GatedAtEnd++
		}
		if spec.operator {
			p.Placements[pod.Labels[v1beta1.LabelPlacement]]++
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
		if arch, ok := r.nodeArch[pod.Spec.NodeName]; !ok || !pods[i].Runs(arch) {
			p.MisplacedPods++
		}
	}
	if len(p.Placements) == 0 {
		p.Placements = nil
	}
	// Per-pod latencies, in microseconds, pods in index order.
	us := func(d time.Duration) int64 { return max(d, 0).Microseconds() }
	var s report.Samples
	for i := range pods {
		if c.sent[i] < 0 {
			continue
		}
		t := res.Pods[i]
		s.Create = append(s.Create, us(c.done[i]-c.sent[i]))
		// An ungated pod is schedulable once stored: the first evidence is
		// the create's answer or the first watch event, whichever came
		// first (the watch may lag behind the scheduler's own).
		from := t.Seen
		if from < 0 || c.done[i] < from {
			from = c.done[i]
		}
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
	p.Samples = s
	if a := r.s.Workload.Arrival; a.Mode == scenario.ArrivalSteps {
		due := workload.Arrivals(a, len(pods))
		totals := make([]time.Duration, len(pods))
		for i := range pods {
			totals[i] = -1
			if b := res.Pods[i].Bound; b >= 0 && c.sent[i] >= 0 {
				totals[i] = b - c.sent[i]
			}
		}
		p.Steps, p.SustainedRate = stepStats(a.Steps, due, totals, a.SustainLatency.D())
	}
	for _, fam := range []string{"gateHold", "schedule", "total", "create"} {
		if xs := s.Seconds(fam); len(xs) > 0 {
			p.Latency[fam] = stats.Summarize(xs)
		}
	}
	if first >= 0 {
		p.CreateSeconds = (lastCreate - first).Seconds()
		end := lastBound
		if end < 0 {
			end = lastCreate
		}
		p.DurationSeconds = (end - first).Seconds()
		if p.DurationSeconds > 0 {
			p.Throughput = float64(p.BoundPods) / p.DurationSeconds
		}
		p.PerSecond = perSecond(c, res, first, end)
	}
	return p
}

// perSecond buckets creates, gate removals and binds by second since the
// first create.
func perSecond(c *creates, res recorder.Result, first, end time.Duration) report.PerSecond {
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
	for i, t := range res.Pods {
		if c.sent[i] >= 0 {
			bucket(ps.Created, c.sent[i])
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
