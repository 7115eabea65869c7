package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/affinity"
	"github.com/archgate/archgate/simulator/internal/calibrate"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/floorgate"
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
	// handwritten gives every pod the architecture affinity a user would
	// write (the handwritten-affinity pass; the operator is off).
	handwritten bool
	// floor is the minimal admission that adds the handwritten pass's affinity; FloorNone
	// writes it at creation.
	floor    scenario.Floor
	timeline []scenario.Event
	// attacker adds the attacker's pods (workload.Plan.Attack) in a
	// namespace of their own; the pass's figures are the workload's.
	attacker bool
	// count counts the components' metrics and the registry's requests over the pass
	// (passResult.counts).
	count bool
	// gate gates the pods a gate-based placement must hold and releases them after the
	// registry model's time (scenario.FloorGate).
	gate bool
}

// creates holds the creators' times of each pod while they run (offsets from the epoch),
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

// passResult is what one pass returns: its figures, the timeline events as
// they happened and the problems of the pass itself (watch lost, creates
// failed). Nothing else of the run is touched.
type passResult struct {
	pass     *report.Pass
	timeline []report.AppliedEvent
	errors   []string
	// counts are set when the spec asked for them.
	counts counts
}

// calibrationRounds is how many one-second rounds calibrate.NsPerOp takes
// the best of before each pass.
const calibrationRounds = 3

// runPass creates the workload at its arrival pattern, applies the timeline
// and waits until every pod reached a final state (bound, or Pending by
// design once the operator decided on it) or the deadline passes.
//
// It stays one function of about 90 lines on purpose: the order of its probes is the
// measurement. Calibration, the scheduler's SLI, the apiserver's admission figures, the cost
// mark, the profiles and the counts are read before the epoch while the cluster is idle (the
// arrivals are due from the epoch, so anything slow between it and the first create sends
// the first pods together: a burst the pass would measure); the recorder watches before the
// first create; the cost mark ends once
// the creators stopped, the recorder after the timeline reverted its windows, and the final
// state is listed last. Spread over helpers, that order would be hidden in their call order.
func (r *run) runPass(ctx context.Context, spec passSpec) (passResult, error) {
	pods := r.plan.Pods
	all, objOpts, err := r.passWorkload(ctx, spec)
	if err != nil {
		return passResult{}, err
	}
	before := r.startProbes(ctx, spec.name)
	var out passResult
	if spec.count {
		if out.counts, err = r.startCounts(ctx); err != nil {
			return out, err
		}
	}
	epoch := time.Now()
	misplaced := summaryInput{pods: pods, nodePlatform: r.nodes}.misplaced
	pending := pendingByDesign(pods, spec.operator || spec.handwritten)
	// An attack pod is final once bound: whatever holds it, archgate must release it.
	recOpts := recorder.Options{Client: r.kube.client, Selector: r.selector(spec.name), Pods: len(all), Epoch: epoch,
		PendingByDesign: pending, DecidedAtCreation: spec.handwritten}
	monitor := spec.operator && r.s.Kubelet.ExecFormatErrors && r.s.Operator.ClusterConfig.Plugins.ExecFormatErrorMonitorEnabled()
	if monitor {
		// A misplaced pod is final once the monitor labelled it.
		recOpts.AwaitExecFormat = misplaced
	}
	rec, err := recorder.Start(ctx, recOpts)
	if err != nil {
		return passResult{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			rec.Stop()
		}
	}()
	passCtx, cancelPass := context.WithCancel(ctx)
	defer cancelPass()
	c := &creates{sent: make([]time.Duration, len(all)), done: make([]time.Duration, len(all))}
	var wg sync.WaitGroup
	var gate *floorgate.Gate
	if spec.gate {
		gate = r.floorGate(passCtx, objOpts.Namespaces)
	}
	wg.Go(func() { r.create(passCtx, epoch, all, r.arrivals(len(pods), len(all)), objOpts, c, gate) })
	kubelet := r.startFakeKubelet(passCtx, spec.name, misplaced)
	var tl *timeline
	if spec.operator && len(spec.timeline) > 0 {
		tl = r.startTimeline(ctx, passCtx, epoch, spec.timeline)
	}
	deadlineHit, waitErr := r.waitFinal(ctx, rec, c, len(all), spec.name, epoch)
	end := time.Since(epoch)
	cancelPass()
	wg.Wait()
	if gate != nil {
		if _, err := gate.Stop(); err != nil {
			out.errors = append(out.errors, fmt.Sprintf("%s pass: floor gate: %v", spec.name, err))
		}
	}
	costEnd := r.stopProbes(context.WithoutCancel(ctx), before)
	if tl != nil {
		out.timeline = tl.stop()
	}
	res := rec.Stop()
	stopped = true
	var attacker *report.Attacker
	if spec.attacker {
		attacker = summarizeAttacker(all[len(pods):], res.Pods[len(pods):], c.sent[len(pods):], end, r.s.Operator.ClusterConfig.ImageInspection.Settings().MaxGateAge)
		res.Pods = res.Pods[:len(pods)]
	}
	completeFailovers(out.timeline, res.Pods)
	completeWebhookDowns(out.timeline, res.Pods, pods)
	if waitErr != nil && errors.Is(waitErr, context.Canceled) {
		return out, waitErr
	}
	in := summaryInput{name: spec.name, operator: spec.operator, pods: pods, pending: pending, nodePlatform: r.nodes,
		arrival: r.s.Workload.Arrival, creates: c.times(len(pods)), watch: res}
	if out.pass, err = r.summarizePass(ctx, in, kubelet, monitor); err != nil {
		return out, err
	}
	out.pass.Attacker = attacker
	out.pass.DeadlineHit = deadlineHit
	r.fillProbes(context.WithoutCancel(ctx), before, out.pass, costEnd)
	if res.Err != nil {
		out.errors = append(out.errors, fmt.Sprintf("%s pass: %v", spec.name, res.Err))
	}
	if e := c.firstErr.Load(); e != nil {
		out.errors = append(out.errors, fmt.Sprintf("%s pass: %d creates failed, first: %v", spec.name, c.failed.Load(), *e))
	}
	return out, waitErr
}

// passWorkload creates the pass's namespaces and returns its pods (the workload's, then the
// attacker's) and how to make their objects.
func (r *run) passWorkload(ctx context.Context, spec passSpec) ([]workload.Pod, workload.ObjectOptions, error) {
	nss := r.namespaces(spec.name)
	all := r.plan.Pods
	if spec.attacker {
		if !r.cluster.reachesHarness() {
			return nil, workload.ObjectOptions{}, errors.New("the attacker needs the simulated cluster's registry and its own host: run without an existing cluster")
		}
		nss = append(nss, fmt.Sprintf("sim-%s-%s-attacker", r.id, spec.name))
		all = append(slices.Clone(all), r.plan.Attack...)
	}
	if err := r.createNamespaces(ctx, nss, spec.operator); err != nil {
		return nil, workload.ObjectOptions{}, err
	}
	reg := r.cluster.registry()
	return all, workload.ObjectOptions{
		Host:       reg.host,
		HangHost:   reg.hang,
		Namespaces: nss,
		Labels:     map[string]string{workload.LabelRun: r.id, workload.LabelPass: spec.name},
		CPU:        *r.s.Workload.Requests.CPU,
		Memory:     *r.s.Workload.Requests.Memory,

		// With a floor the floor webhook adds it at admission instead, or the floor policy
		// from the answer the pod carries.
		HandwrittenAffinity:    spec.handwritten && spec.floor == scenario.FloorNone,
		HandwrittenAnswer:      spec.handwritten && spec.floor.IsPolicy(),
		HandwrittenPreferences: r.handwrittenPreferences(),
		Adjust:                 r.cluster.confine(),
	}, nil
}

// probes are the readings taken before a pass's epoch, which the figures after it are
// compared with.
type probes struct {
	calibration  float64
	sli          []stats.Bucket
	admission    admissionTotals
	admissionOK  bool
	cost         costMark
	stopProfiles func()
}

// startProbes has kube-apiserver collect its heap, then reads the machine's speed (while the
// cluster is idle: calibrate's doc), the scheduler's SLI, the apiserver's admission figures
// and a cost mark, and starts the profiles.
func (r *run) startProbes(ctx context.Context, pass string) probes {
	r.collectAPIServerHeap(ctx, pass)
	p := probes{calibration: calibrate.NsPerOp(calibrationRounds) / 1e9}
	p.sli = r.cluster.schedulerSLI(ctx)
	p.admission, p.admissionOK = r.apiserverAdmission(ctx)
	p.cost = r.markCost(ctx)
	p.stopProfiles = r.startProfiles(ctx, pass)
	return p
}

// collectAPIServerHeap has kube-apiserver run a garbage collection (its pprof heap handler
// with gc=1), so that every pass starts right after one. The apiserver's heap carries the
// earlier passes, and a collection of it costs about a core for a second on a 2-core machine:
// without this, where in a pass it fell depended on the passes before, and one that fell in a
// pass's first 10 s set that window's tails (10k-pods-policy: creates up to 80 ms, bindings
// up to 96 ms, about 20 pods, in the main pass only). After it, when the next one falls
// depends on what the pass itself allocates. A cluster that does not serve the profile (an
// existing one with profiling off) is left as it is.
func (r *run) collectAPIServerHeap(ctx context.Context, pass string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := r.kube.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil {
		r.logf("%s pass: kube-apiserver's heap not collected before the pass (%v)", pass, err)
	}
}

// stopProbes takes the end cost mark and ends the profiles, once the creators stopped.
func (r *run) stopProbes(ctx context.Context, p probes) costMark {
	end := r.markCost(ctx)
	p.stopProfiles()
	return end
}

// fillProbes sets the pass's calibration, SLI, admission and cost figures from the probes
// before it and the readings now.
func (r *run) fillProbes(ctx context.Context, p probes, pass *report.Pass, costEnd costMark) {
	pass.CalibrationSeconds = p.calibration
	pass.SchedulerSLI = sliDelta(p.sli, r.cluster.schedulerSLI(ctx))
	if after, ok := r.apiserverAdmission(ctx); ok && p.admissionOK {
		pass.Admission = admissionCost(p.admission, after, pass.Pods)
		pass.APIServerRuntime = apiserverRuntime(p.admission, after, pass.Pods)
	}
	pass.Cost = r.cost(p.cost, costEnd, r.sampler.Samples(), pass.Pods)
}

// startFakeKubelet starts the nodes' fake kubelet for the pass when the scenario asks for
// one (exec format errors, running pods) and the nodes are the run's; nil otherwise (on an
// existing cluster the nodes are kwok's, which reports the pods itself).
func (r *run) startFakeKubelet(ctx context.Context, pass string, misplaced func(int, string) bool) *fakenodes.Kubelet {
	k := r.s.Kubelet
	if !r.cluster.fakeKubelet() || !(k.ExecFormatErrors || k.RunPods) {
		return nil
	}
	pods := r.plan.Pods
	return fakenodes.StartKubelet(ctx, r.kube.client, r.selector(pass), fakenodes.KubeletOptions{
		ExecFormatErrors: k.ExecFormatErrors, RunPods: k.RunPods,
		Misplaced: func(pod *corev1.Pod) bool {
			i, ok := workload.PodIndex(pod.Name)
			return ok && i < len(pods) && misplaced(i, pod.Spec.NodeName)
		}})
}

// summarizePass lists the pass's final state and summarizes it with what the fake kubelet
// reported (nil: none ran).
func (r *run) summarizePass(ctx context.Context, in summaryInput, kubelet *fakenodes.Kubelet, monitor bool) (*report.Pass, error) {
	// The final state comes from the apiserver, not the watch: it is exact
	// even if the recorder dropped events.
	final, err := r.listPods(context.WithoutCancel(ctx), in.name)
	if err != nil {
		return nil, err
	}
	in.final = final
	var running int64
	if kubelet != nil {
		written, failed := kubelet.Wait()
		running = kubelet.Running()
		if r.s.Kubelet.ExecFormatErrors {
			in.execFormat = &report.ExecFormat{ReportedPods: written, StatusWriteErrors: failed, Monitor: monitor}
		}
	}
	p := summarize(in)
	p.RunningPods = running
	return p, nil
}

// waitFinal waits until every created pod reached a final state, the
// deadline passes (deadlineHit) or a component fails.
func (r *run) waitFinal(ctx context.Context, rec *recorder.Recorder, c *creates, pods int, pass string, epoch time.Time) (deadlineHit bool, err error) {
	deadline := epoch.Add(r.s.Deadline.D())
	prog := newProgress(r.opts.Progress, r.opts.ProgressLive, pass, pods, epoch)
	defer prog.finish()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		p := rec.Progress()
		done := c.finished.Load()
		prog.update(done, p)
		if done == int64(pods) && p.Final >= int64(pods)-c.failed.Load() {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
		case <-rec.Changed():
		}
		if time.Now().After(deadline) {
			return true, nil
		}
		if err := r.comps.err(); err != nil {
			return false, err
		}
	}
}

// times returns the creators' times of the first n pods once they are done.
func (c *creates) times(n int) createTimes {
	return createTimes{sent: c.sent[:n], done: c.done[:n], lagMax: time.Duration(c.lagMax.Load())}
}

// arrivals is when each of the pass's pods is due: the workload's n at its
// arrival pattern, then the attacker's, up to all, at the attacker's rate.
func (r *run) arrivals(n, all int) []time.Duration {
	out := workload.Arrivals(r.s.Workload.Arrival, n)
	if all > n {
		out = append(out, workload.Arrivals(scenario.ArrivalSpec{Mode: scenario.ArrivalRate, Rate: r.s.Attacker.Rate}, all-n)...)
	}
	return out
}

// create paces the creates at their arrival times with a bounded number of
// requests in flight.
func (r *run) create(ctx context.Context, epoch time.Time, pods []workload.Pod, arrivals []time.Duration, o workload.ObjectOptions, c *creates, gate *floorgate.Gate) {
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(arrivals[a], arrivals[b]) })
	queue := make(chan int, r.s.Workload.Arrival.Concurrency)
	var wg sync.WaitGroup
	for range r.s.Workload.Arrival.Concurrency {
		wg.Go(func() {
			for i := range queue {
				c.sent[i] = time.Since(epoch)
				lag := c.sent[i] - arrivals[i]
				for old := c.lagMax.Load(); int64(lag) > old && !c.lagMax.CompareAndSwap(old, int64(lag)); old = c.lagMax.Load() {
				}
				pod := pods[i].Object(o)
				gated := r.admitFloorGate(gate, pods, i, pod)
				if err := r.createPod(ctx, pod); err != nil {
					c.done[i], c.sent[i] = -1, -1
					c.failed.Add(1)
					c.firstErr.CompareAndSwap(nil, &err)
				} else {
					c.done[i] = time.Since(epoch)
					if gated {
						gate.Created(i)
					}
				}
				c.finished.Add(1)
			}
		})
	}
	for k, i := range order {
		if d := time.Until(epoch.Add(arrivals[i])); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			for _, j := range order[k:] {
				c.sent[j], c.done[j] = -1, -1
			}
			break
		}
		queue <- i
	}
	close(queue)
	wg.Wait()
}

// handwrittenPreferences adds to a pod of the handwritten pass the preferred terms and the
// tolerations archgate's own rules (affinity.AddPreferences, affinity.AddTolerations) give it
// under the scenario's ClusterPodPlacementConfig: without them the main pass would be charged
// for the scheduler scoring the preferences the cluster asked for, which a user writing the
// affinity by hand writes too, and the handwritten pass could not use tainted nodes.
func (r *run) handwrittenPreferences() func(*corev1.Pod, []string) {
	cluster := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}, Spec: r.s.Operator.ClusterConfig}
	return func(pod *corev1.Pod, compatible []string) {
		// Only a PodPlacementConfig's label selector can fail, and there is none.
		_ = affinity.AddPreferences(pod, compatible, cluster)
		affinity.AddTolerations(pod, compatible, cluster)
	}
}

// createPod creates a pod, retrying briefly on errors a busy apiserver
// returns (timeouts, 429, 5xx).
func (r *run) createPod(ctx context.Context, pod *corev1.Pod) error {
	return retryBusy(ctx, func() error {
		_, err := r.kube.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// retryBusy calls do until it succeeds, fails with an error other than those a busy
// apiserver returns (timeouts, 429, 5xx), or has tried five times.
func retryBusy(ctx context.Context, do func() error) error {
	var err error
	for attempt := range 5 {
		err = do()
		if err == nil {
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
		if _, err := r.kube.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
		if !operator {
			continue
		}
		ppcs, err := prepareNamespace(ctx, r.kube.crc, r.s, r.cluster.registry(), name, i)
		if err != nil {
			return err
		}
		if ppcs > 0 {
			if err := r.comps.startLocal(ctx, name); err != nil {
				return err
			}
		}
	}
	if r.s.ControlPlane.ClusterDefaults || r.opts.Kubeconfig != "" {
		if err := r.waitDefaultServiceAccounts(ctx, nss); err != nil {
			return err
		}
	}
	return r.warmNamespaces(ctx, nss)
}

// warmNamespaces dry-runs the creation of the probe pod in each namespace, so that every pass
// starts with namespaces the apiserver's admission has seen: the first pod of a namespace
// created moments before otherwise waits on its lookups (25–95 ms on the first pod of each
// namespace in passes without the operator, not in the operator's), which put the first
// seconds' create p99 of one pass against another's apart by ×2 for no work of archgate's.
func (r *run) warmNamespaces(ctx context.Context, nss []string) error {
	p, host := r.probe(), r.cluster.registry().host
	for _, ns := range nss {
		if err := r.kube.crc.Create(ctx, p.object(host, ns), crclient.DryRunAll); err != nil {
			return fmt.Errorf("namespace %s: dry-running a pod: %w", ns, err)
		}
	}
	return nil
}

// waitDefaultServiceAccounts waits, for at most a minute, until each namespace has the default
// ServiceAccount that kube-controller-manager creates: with the ServiceAccount admission plugin
// a pod created before it is refused.
func (r *run) waitDefaultServiceAccounts(ctx context.Context, nss []string) error {
	for _, ns := range nss {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := r.kube.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("namespace %s: waiting for its default ServiceAccount: %w", ns, err)
		}
	}
	return nil
}

// listPods lists the pass's pods, paginated.
func (r *run) listPods(ctx context.Context, pass string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{LabelSelector: r.selector(pass), Limit: 2000}
	for {
		list, err := r.kube.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
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
		err := r.kube.client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0),
			metav1.ListOptions{LabelSelector: r.selector(pass)})
		if err != nil {
			return fmt.Errorf("deleting the %s pass's pods: %w", pass, err)
		}
	}
	return nil
}
