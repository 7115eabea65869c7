//go:build integration

/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package podplacement

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// waitTimeout bounds every wait of the tests: pods normally take milliseconds, failure tests
// a few hundred.
const waitTimeout = 30 * time.Second

// eventually polls cond every 10 ms until it returns true, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(s.ctx, 10*time.Millisecond, waitTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// newNamespace creates a namespace for one test. When the test ends, no pod in it may still
// carry the scheduling gate.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	name = strings.Trim(name[:min(len(name), 40)], "-") + "-" + randomSuffix()
	if err := s.client.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pods := &corev1.PodList{}
		if err := s.client.List(context.Background(), pods, client.InNamespace(name)); err != nil {
			t.Errorf("listing pods at the end of the test: %v", err)
			return
		}
		for _, p := range pods.Items {
			if gated(&p) {
				t.Errorf("pod %s/%s is still gated at the end of the test", p.Namespace, p.Name)
			}
		}
	})
	return name
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == v1beta1.SchedulingGateName
	})
}

// pod is a pod labelled app=<name> with one container per image.
func pod(namespace, name string, images ...string) *corev1.Pod {
	return objects.Pod(namespace, name).WithLabel("app", name).WithImage(images...).Build()
}

// create creates the pod and checks that the webhook gated it (the response is the admitted pod).
func create(t *testing.T, p *corev1.Pod, wantGated bool) *corev1.Pod {
	t.Helper()
	if err := s.client.Create(s.ctx, p); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	if got := gated(p) && p.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueGated; got != wantGated {
		t.Fatalf("pod %s gated at admission = %t, want %t (gates %v, labels %v)", p.Name, got, wantGated, p.Spec.SchedulingGates, p.Labels)
	}
	return p
}

// waitUngated waits until the controller removed the gate, and returns the pod.
func waitUngated(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got := &corev1.Pod{}
	eventually(t, "pod "+p.Name+" ungated", func(ctx context.Context) (bool, error) {
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return false, err
		}
		return !gated(got), nil
	})
	if got.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueRemoved {
		t.Errorf("pod %s: label %s = %q, want %q", p.Name, v1beta1.LabelSchedulingGate, got.Labels[v1beta1.LabelSchedulingGate], v1beta1.LabelValueRemoved)
	}
	return got
}

// podWatch counts the modifications of the pods of a namespace, from before their creation. A
// goroutine drains the watch at once.
type podWatch struct {
	mu       sync.Mutex
	modified map[string]int
	removed  map[string]bool
	closed   bool
	changed  chan struct{} // signalled (non-blocking) after every event
}

func watchPods(t testing.TB, namespace string) *podWatch {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Start from the namespace's current state, and resume from the last event seen whenever the
	// apiserver drops the watch (it drops watchers that fall behind, which happens on a loaded
	// machine): no event is lost or counted twice.
	list, err := cs.CoreV1().Pods(namespace).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods(namespace).Watch(ctx, opts)
		},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-w.Done()
	})
	pw := &podWatch{modified: map[string]int{}, removed: map[string]bool{}, changed: make(chan struct{}, 1)}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				pw.mu.Lock()
				if ev.Type == watch.Modified {
					pw.modified[p.Name]++
				}
				if !gated(p) && p.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueRemoved {
					pw.removed[p.Name] = true
				}
				pw.mu.Unlock()
			}
			pw.signal()
		}
		pw.mu.Lock()
		pw.closed = true
		pw.mu.Unlock()
		pw.signal()
	}()
	return pw
}

func (pw *podWatch) signal() {
	select {
	case pw.changed <- struct{}{}:
	default:
	}
}

// untilUngated waits until every named pod was seen ungated, and returns how many times each was
// modified after its creation.
func (pw *podWatch) untilUngated(t testing.TB, names ...string) map[string]int {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		pw.mu.Lock()
		done, closed := true, pw.closed
		for _, n := range names {
			done = done && pw.removed[n]
		}
		var out map[string]int
		if done {
			out = map[string]int{}
			for _, n := range names {
				out[n] = pw.modified[n]
			}
		}
		pw.mu.Unlock()
		switch {
		case done:
			return out
		case closed:
			t.Fatal("pod watch closed")
		}
		select {
		case <-pw.changed:
		case <-timeout:
			t.Fatalf("%d pods not all ungated after %v", len(names), waitTimeout)
		}
	}
}

// podEvents returns the Events recorded about a pod.
func podEvents(t *testing.T, p *corev1.Pod) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := s.client.List(s.ctx, list, client.InNamespace(p.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == p.Name && e.Regarding.Kind == "Pod" {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an Event with the reason about the pod and returns it.
func waitEvent(t *testing.T, p *corev1.Pod, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	eventually(t, "event "+reason+" about "+p.Name, func(context.Context) (bool, error) {
		for _, e := range podEvents(t, p) {
			if e.Reason == reason {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// metric returns the value of a counter or gauge of the controller's registry whose labels
// include want; 0 when absent.
func metric(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !labelsMatch(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
