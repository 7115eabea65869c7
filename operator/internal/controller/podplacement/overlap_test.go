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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// countingSink is a record.EventSink that keeps the Events written (created, or patched when
// the correlator saw the same one before), by involved object name.
type countingSink struct {
	mu      sync.Mutex
	created map[string][]*corev1.Event
}

func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.write(e), nil }

func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.write(e), nil }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.write(e), nil
}

func (s *countingSink) write(e *corev1.Event) *corev1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created[e.InvolvedObject.Name] = append(s.created[e.InvolvedObject.Name], e)
	return e
}

func (s *countingSink) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.created[name])
}

// TestOverlapEventsRateLimit records many overlaps of two configurations (one per pod, as the
// reconciler does) and checks that one Event per configuration reaches the apiserver per
// interval. A third configuration's Event, recorded last, bounds the wait: the broadcaster
// writes in order.
func TestOverlapEventsRateLimit(t *testing.T) {
	const interval = 10 * time.Minute
	sink := &countingSink{created: map[string][]*corev1.Event{}}
	clock := clocktesting.NewFakeClock(time.Now())
	o := NewOverlapEvents(sink, OverlapEventsOptions{Interval: interval, Scheme: testScheme(t), Clock: clock})
	defer o.Stop()
	ppc := func(name string) *v1beta1.PodPlacementConfig {
		return &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name)}}
	}
	skipped := placement.SkippedSource{Reason: placement.SkipHigherPriority,
		By: placement.SourceRef{Kind: placement.KindPodPlacementConfig, Namespace: "team", Name: "high"}}
	record := func(config string, pods int) {
		for i := range pods {
			o.Record(ppc(config), skipped, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-" + string(rune('a'+i%26))}})
		}
	}
	waitFor := func(name string, want int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return sink.count(name) >= want, nil })
		if err != nil {
			t.Fatalf("%d Events about %s, want %d", sink.count(name), name, want)
		}
	}

	record("low", 200)
	record("lower", 50)
	record("sentinel-1", 1)
	waitFor("sentinel-1", 1)
	if got := []int{sink.count("low"), sink.count("lower")}; got[0] != 1 || got[1] != 1 {
		t.Fatalf("Events about low, lower = %v, want one each", got)
	}
	e := sink.created["low"][0]
	if e.Reason != reasonConfigOverlap || e.Type != corev1.EventTypeNormal || e.InvolvedObject.Kind != "PodPlacementConfig" {
		t.Errorf("event %s %s about %s", e.Type, e.Reason, e.InvolvedObject.Kind)
	}
	t.Logf("event: %s", e.Message)

	clock.Step(interval)
	record("low", 200)
	record("sentinel-2", 1)
	waitFor("sentinel-2", 1)
	if got := sink.count("low"); got != 2 {
		t.Errorf("Event writes about low after one interval = %d, want 2", got)
	}
}

// TestReconcileRecordsOverlaps places pods that a PodPlacementConfig and the cluster config
// both weight: the skipped cluster config gets one overlap Event for all of them, and each pod
// is still written once.
func TestReconcileRecordsOverlaps(t *testing.T) {
	sink := &countingSink{created: map[string][]*corev1.Event{}}
	o := NewOverlapEvents(sink, OverlapEventsOptions{Scheme: testScheme(t)})
	defer o.Stop()
	objs := []client.Object{cppc(nil, objects.Platform("amd64", 10)), objects.PodPlacementConfig(testNamespace, "arm-first").WithPriority(10).WithPlatforms(objects.Platform("arm64", 75)).Build()}
	names := []string{"p1", "p2", "p3"}
	for _, n := range names {
		objs = append(objs, gatedPod(n, "reg.example/multi:1").Build())
	}
	h := newHarness(t, Options{OverlapEvents: o}, map[string][]answer{"reg.example/multi:1": {ok("amd64", "arm64")}}, objs...)
	for _, n := range names {
		h.drive(t, n)
	}
	o.Record(objects.PodPlacementConfig(testNamespace, "sentinel").WithPlatforms().Build(), placement.SkippedSource{}, &corev1.Pod{})
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return sink.count("sentinel") == 1, nil }); err != nil {
		t.Fatal("the sentinel Event was never written")
	}
	if got := sink.count(v1beta1.SingletonName); got != 1 {
		t.Errorf("overlap Event writes about the ClusterPodPlacementConfig = %d, want 1", got)
	}
	if got := sink.count("arm-first"); got != 0 {
		t.Errorf("overlap Event writes about the applied PodPlacementConfig = %d, want 0", got)
	}
	if h.writes != len(names) {
		t.Errorf("apiserver writes = %d, want %d (one per pod)", h.writes, len(names))
	}
}
