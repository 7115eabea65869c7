// Package recorder timestamps what happens to the simulator's pods, from
// watch-receive times on one clock: the first time a pod is seen, seen
// gated, seen ungated and seen bound. Object timestamps have one-second
// resolution and come from another clock, so they are not used.
//
// The recorder never blocks the system under test: the watch reader stamps
// each event and hands it to the aggregator over a bounded channel; when the
// channel is full the event is dropped and counted, and the count is
// reported. A lost event only delays a transition to the next event of the
// same pod (its fields are absolute, not deltas).
package recorder

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/simulator/internal/fakenodes"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// DefaultBuffer is the default capacity of the event channel: a few seconds
// of the busiest pass (≈ 4 events per pod at 1000 pods/s).
const DefaultBuffer = 16384

// PodTimes are the watch-receive times of one pod, as offsets from the
// recorder's epoch; a negative value means never seen.
type PodTimes struct {
	// Seen is the first event of the pod.
	Seen time.Duration
	// Gated is the first event with the scheduling gate.
	Gated time.Duration
	// Ungated is the first event without the gate after a gated one.
	Ungated time.Duration
	// Bound is the first event with spec.nodeName.
	Bound time.Duration
	// Node is the node the pod was bound to.
	Node string
	// Placement is the last multiarch.openshift.io/placement label seen.
	Placement string
	// ExecFormatReported is the first event whose status reports an exec
	// format error (fakenodes.ReportsExecFormatError); ExecFormatLabelled the
	// first with the monitor's multiarch.openshift.io/exec-format-error label.
	ExecFormatReported, ExecFormatLabelled time.Duration
}

// Options configure a Recorder.
type Options struct {
	// Client watches the pods.
	Client kubernetes.Interface
	// Selector is the label selector of the pods to watch.
	Selector string
	// Pods is the number of pods (indices 0..Pods-1, see workload.PodIndex).
	Pods int
	// Buffer is the capacity of the event channel; DefaultBuffer when 0.
	Buffer int
	// Epoch is time zero of the offsets; the watch must start before it.
	Epoch time.Time
	// PendingByDesign marks, by index, the pods allowed to end Pending: they
	// count as final once the operator decided on them (gate removed, or a
	// placement label set). Every other pod is final once bound. Nil: none.
	PendingByDesign []bool
	// DecidedAtCreation: the pods carried their placement from creation (a
	// handwritten affinity), so a pod Pending by design is final once seen.
	DecidedAtCreation bool
	// AwaitExecFormat, when set, says whether pod i bound to node must also
	// get the exec-format-error label before it counts as final (a misplaced
	// pod while the exec-format-error monitor runs). Nil: no pod must.
	AwaitExecFormat func(i int, node string) bool
}

// Recorder watches pods and records their transitions.
type Recorder struct {
	opts    Options
	events  chan event
	drops   atomic.Int64
	total   atomic.Int64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	watchEr atomic.Pointer[error]

	// Owned by the aggregator goroutine until Stop returns.
	pods  []PodTimes
	final []bool

	// Progress counters, updated by the aggregator.
	seen, gated, ungated, bound, settled atomic.Int64
	changed                              chan struct{}
}

type event struct {
	at        time.Duration
	index     int32
	deleted   bool
	gated     bool
	node      string
	placement string
	// execFormat and execFormatLabel: the status reports an exec format
	// error; the pod carries the monitor's label.
	execFormat, execFormatLabel bool
}

// Start lists the pods' resource version and starts watching from it.
// Call Stop to end the watch and get the results.
func Start(ctx context.Context, opts Options) (*Recorder, error) {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	r := &Recorder{
		opts:    opts,
		events:  make(chan event, opts.Buffer),
		pods:    make([]PodTimes, opts.Pods),
		final:   make([]bool, opts.Pods),
		changed: make(chan struct{}, 1),
	}
	for i := range r.pods {
		r.pods[i] = PodTimes{Seen: -1, Gated: -1, Ungated: -1, Bound: -1, ExecFormatReported: -1, ExecFormatLabelled: -1}
	}
	pods := opts.Client.CoreV1().Pods(metav1.NamespaceAll)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: opts.Selector, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("listing pods to start the watch: %w", err)
	}
	lw := &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = opts.Selector
			o.AllowWatchBookmarks = true
			return pods.Watch(ctx, o)
		},
	}
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("starting pod watch: %w", err)
	}
	r.wg.Add(2)
	go r.read(ctx, w)
	go r.aggregate()
	return r, nil
}

// read stamps every event and hands it on without ever blocking.
func (r *Recorder) read(ctx context.Context, w *watchtools.RetryWatcher) {
	defer r.wg.Done()
	defer close(r.events)
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.Done():
			if ctx.Err() == nil {
				err := fmt.Errorf("pod watch ended early")
				r.watchEr.Store(&err)
			}
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			at := time.Since(r.opts.Epoch)
			e, ok := toEvent(ev.Type, ev.Object)
			if !ok {
				continue
			}
			e.at = at
			r.total.Add(1)
			select {
			case r.events <- e:
			default:
				r.drops.Add(1)
			}
		}
	}
}

func toEvent(t watch.EventType, obj runtime.Object) (event, bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || (t != watch.Added && t != watch.Modified && t != watch.Deleted) {
		return event{}, false
	}
	i, ok := workload.PodIndex(pod.Name)
	if !ok {
		return event{}, false
	}
	return event{
		index:           int32(i),
		deleted:         t == watch.Deleted,
		gated:           v1beta1.HasSchedulingGate(&pod.Spec),
		node:            pod.Spec.NodeName,
		placement:       pod.Labels[v1beta1.LabelPlacement],
		execFormat:      fakenodes.ReportsExecFormatError(pod),
		execFormatLabel: pod.Labels[v1beta1.LabelExecFormatError] == v1beta1.LabelValueTrue,
	}, true
}

// aggregate applies events to the per-pod times.
func (r *Recorder) aggregate() {
	defer r.wg.Done()
	for e := range r.events {
		if int(e.index) >= len(r.pods) || e.deleted {
			continue
		}
		p := &r.pods[e.index]
		if p.Seen < 0 {
			p.Seen = e.at
			r.seen.Add(1)
		}
		if e.gated && p.Gated < 0 {
			p.Gated = e.at
			r.gated.Add(1)
		}
		if !e.gated && p.Gated >= 0 && p.Ungated < 0 {
			p.Ungated = e.at
			r.ungated.Add(1)
		}
		if e.node != "" && p.Bound < 0 {
			p.Bound = e.at
			p.Node = e.node
			r.bound.Add(1)
		}
		if e.placement != "" {
			p.Placement = e.placement
		}
		if e.execFormat && p.ExecFormatReported < 0 {
			p.ExecFormatReported = e.at
		}
		if e.execFormatLabel && p.ExecFormatLabelled < 0 {
			p.ExecFormatLabelled = e.at
		}
		if !r.final[e.index] && r.isFinal(int(e.index)) {
			r.final[e.index] = true
			r.settled.Add(1)
		}
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
}

// isFinal reports whether pod i reached a final state: bound (and labelled,
// if it awaits the exec-format-error label), or, for a pod Pending by
// design, decided on (by the operator, or at creation).
func (r *Recorder) isFinal(i int) bool {
	p := r.pods[i]
	if p.Bound >= 0 {
		awaits := r.opts.AwaitExecFormat != nil && r.opts.AwaitExecFormat(i, p.Node)
		return !awaits || p.ExecFormatLabelled >= 0
	}
	if i >= len(r.opts.PendingByDesign) || !r.opts.PendingByDesign[i] {
		return false
	}
	return p.Ungated >= 0 || p.Placement != "" || (r.opts.DecidedAtCreation && p.Seen >= 0)
}

// Progress is a live view of the counters.
type Progress struct {
	// Seen, Gated, Ungated and Bound count pods that reached each state;
	// Final those bound or, Pending by design, decided on.
	Seen, Gated, Ungated, Bound, Final int64
	// Drops counts dropped events.
	Drops int64
}

// Progress returns the counters now.
func (r *Recorder) Progress() Progress {
	return Progress{Seen: r.seen.Load(), Gated: r.gated.Load(), Ungated: r.ungated.Load(), Bound: r.bound.Load(), Final: r.settled.Load(), Drops: r.drops.Load()}
}

// Changed is signalled (coalesced) after each applied event.
func (r *Recorder) Changed() <-chan struct{} { return r.changed }

// Result is what the recorder saw.
type Result struct {
	// Pods are the times of each pod, by index.
	Pods []PodTimes
	// Events counts the watch events received; Drops those dropped.
	Events, Drops int64
	// Err is set when the watch ended before Stop.
	Err error
}

// Stop ends the watch, drains the channel and returns the results.
func (r *Recorder) Stop() Result {
	r.cancel()
	r.wg.Wait()
	res := Result{Pods: r.pods, Events: r.total.Load(), Drops: r.drops.Load()}
	if err := r.watchEr.Load(); err != nil {
		res.Err = *err
	}
	return res
}
