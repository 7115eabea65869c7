package recorder

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func TestAggregateTransitions(t *testing.T) {
	r := &Recorder{events: make(chan event, 16), pods: make([]PodTimes, 2), final: make([]bool, 2), changed: make(chan struct{}, 1)}
	for i := range r.pods {
		r.pods[i] = PodTimes{Seen: -1, Gated: -1, Ungated: -1, Bound: -1}
	}
	ms := time.Millisecond
	feed := []struct {
		at  time.Duration
		typ watch.EventType
		pod *corev1.Pod
	}{
		{1 * ms, watch.Added, objects.Pod("", "p-00000").WithGate().Build()},
		{2 * ms, watch.Added, objects.Pod("", "p-00001").Build()},                                                                         // never gated (webhook skipped it)
		{5 * ms, watch.Modified, objects.Pod("", "p-00000").WithLabel(v1beta1.LabelPlacement, "arch-set").Build()},                        // gate removed
		{7 * ms, watch.Modified, objects.Pod("", "p-00001").WithNodeName("node-b").Build()},                                               // bound
		{9 * ms, watch.Modified, objects.Pod("", "p-00000").WithNodeName("node-a").WithLabel(v1beta1.LabelPlacement, "arch-set").Build()}, // bound
		{9 * ms, watch.Modified, objects.Pod("", "other").WithNodeName("node-a").Build()},                                                 // not ours
		{10 * ms, watch.Deleted, objects.Pod("", "p-00000").WithNodeName("node-a").Build()},                                               // ignored
	}
	for _, f := range feed {
		e, ok := toEvent(f.typ, f.pod)
		if !ok {
			continue
		}
		e.at = f.at
		r.events <- e
	}
	close(r.events)
	r.wg.Add(1)
	r.aggregate()
	want := []PodTimes{
		{Seen: 1 * ms, Gated: 1 * ms, Ungated: 5 * ms, Bound: 9 * ms, Node: "node-a", Placement: "arch-set"},
		{Seen: 2 * ms, Gated: -1, Ungated: -1, Bound: 7 * ms, Node: "node-b"},
	}
	if diff := cmp.Diff(want, r.pods); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p := r.Progress(); p.Seen != 2 || p.Gated != 1 || p.Ungated != 1 || p.Bound != 2 || p.Final != 2 {
		t.Errorf("progress %+v", p)
	}
}

// TestFinalCountsPendingByDesign checks the pass's end condition: a pod
// Pending by design is final once the operator decided on it, any other pod
// only once bound, so a pod released unplaced cannot stand in for a gated one.
func TestFinalCountsPendingByDesign(t *testing.T) {
	ms := time.Millisecond
	for name, tc := range map[string]struct {
		pending   []bool
		atCreate  bool
		events    []*corev1.Pod
		wantFinal int64
	}{
		"a pod Pending by design is final once seen when placed at creation": {
			pending:   []bool{true, false},
			atCreate:  true,
			events:    []*corev1.Pod{objects.Pod("", "p-00000").Build(), objects.Pod("", "p-00001").Build()},
			wantFinal: 1,
		},
		"a pod Pending by design waits for a decision otherwise": {
			pending: []bool{true, false},
			events:  []*corev1.Pod{objects.Pod("", "p-00000").Build(), objects.Pod("", "p-00001").Build()},
		},
		"gated pods are not final": {
			pending: []bool{false, false},
			events:  []*corev1.Pod{objects.Pod("", "p-00000").WithGate().Build(), objects.Pod("", "p-00001").WithGate().Build()},
		},
		"an ungated unbound pod is not final unless Pending by design": {
			pending:   []bool{true, false},
			events:    []*corev1.Pod{objects.Pod("", "p-00000").WithLabel(v1beta1.LabelPlacement, "no-common-arch").Build(), objects.Pod("", "p-00001").WithLabel(v1beta1.LabelPlacement, "inspection-failed").Build()},
			wantFinal: 1,
		},
		"bound pods are final": {
			pending:   []bool{false, true},
			events:    []*corev1.Pod{objects.Pod("", "p-00000").WithNodeName("n").Build(), objects.Pod("", "p-00001").WithNodeName("n").Build()},
			wantFinal: 2,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Recorder{opts: Options{PendingByDesign: tc.pending, DecidedAtCreation: tc.atCreate}, events: make(chan event, 16), pods: make([]PodTimes, 2),
				final: make([]bool, 2), changed: make(chan struct{}, 1)}
			for i := range r.pods {
				r.pods[i] = PodTimes{Seen: -1, Gated: -1, Ungated: -1, Bound: -1}
			}
			for i, p := range tc.events {
				e, _ := toEvent(watch.Added, p)
				e.at = time.Duration(i+1) * ms
				r.events <- e
			}
			close(r.events)
			r.wg.Add(1)
			r.aggregate()
			if got := r.Progress().Final; got != tc.wantFinal {
				t.Errorf("final = %d, want %d", got, tc.wantFinal)
			}
		})
	}
}
