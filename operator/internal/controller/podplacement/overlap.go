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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
)

// DefaultOverlapEventInterval is the shortest time between two overlap Events about one
// placement configuration.
const DefaultOverlapEventInterval = 10 * time.Minute

// reasonConfigOverlap: a placement configuration's preferred weights were skipped for a pod
// because a higher-priority one matched it first. Normal; recorded on the skipped
// configuration, at most once per DefaultOverlapEventInterval.
const reasonConfigOverlap = "PlacementConfigOverlap"

// OverlapEvents records, on a skipped placement configuration, that another one took
// precedence for its pods. Overlaps concern whole sets of pods, so an Event per pod would
// cost the apiserver a write per pod for one fact: client-go's event correlator (the
// EventSourceObjectSpamFilter, a token bucket per involved object) drops all but one Event
// per configuration per interval, in memory, before any request; the metric
// archgate_placement_preference_sources_skipped_total counts every pod.
type OverlapEvents struct {
	recorder record.EventRecorder
	interval time.Duration
	stop     func()
}

// OverlapEventsOptions configure NewOverlapEvents.
type OverlapEventsOptions struct {
	// Interval is the shortest time between two Events about one configuration;
	// DefaultOverlapEventInterval when zero.
	Interval time.Duration
	// Scheme resolves the configurations' kinds.
	Scheme *runtime.Scheme
	// Clock drives the rate limit; the real clock when nil. Tests set a fake one.
	Clock clock.PassiveClock
}

// NewOverlapEvents starts a recorder that writes to sink; Stop releases it.
func NewOverlapEvents(sink record.EventSink, opts OverlapEventsOptions) *OverlapEvents {
	interval := opts.Interval
	if interval <= 0 {
		interval = DefaultOverlapEventInterval
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: 1,
		QPS:       float32(1 / interval.Seconds()),
		Clock:     opts.Clock,
	}))
	b.StartRecordingToSink(sink)
	return &OverlapEvents{
		recorder: b.NewRecorder(opts.Scheme, corev1.EventSource{Component: EventRecorderName}),
		interval: interval,
		stop:     b.Shutdown,
	}
}

// newOverlapEventsFor starts a recorder writing core/v1 Events through the cluster's API.
func newOverlapEventsFor(cfg *rest.Config, opts OverlapEventsOptions) (*OverlapEvents, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the overlap Events client: %w", err)
	}
	return NewOverlapEvents(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}, opts), nil
}

// Stop shuts the recorder down; Events not yet written are dropped.
func (o *OverlapEvents) Stop() { o.stop() }

// Start waits for ctx to end, then stops the recorder (a manager runnable).
func (o *OverlapEvents) Start(ctx context.Context) error {
	<-ctx.Done()
	o.Stop()
	return nil
}

// NeedLeaderElection is false: the recorder must stop on every replica.
func (o *OverlapEvents) NeedLeaderElection() bool { return false }

// Record notes that config's weights were skipped for pod because by applied first. It never
// blocks: the broadcaster drops Events when its queue is full.
func (o *OverlapEvents) Record(config runtime.Object, skipped placement.SkippedSource, pod *corev1.Pod) {
	o.recorder.Eventf(config, corev1.EventTypeNormal, reasonConfigOverlap,
		"Preferred architecture weights of %s not applied to pod %s/%s and possibly others: %s matched it first, with a higher priority. "+
			"Recorded at most once per %s per configuration; archgate_placement_preference_sources_skipped_total{reason=%q} counts every pod",
		skipped.Source, pod.Namespace, pod.Name, skipped.By, o.interval, skipped.Reason)
}

// overlap is a placement configuration skipped for a pod, to record.
type overlap struct {
	config  runtime.Object
	skipped placement.SkippedSource
}

// overlapObject returns the skipped configuration of s among configs and cluster; nil when it
// is not one of them (the pod's own preference).
func overlapObject(s placement.SkippedSource, configs []v1beta1.PodPlacementConfig, cluster *v1beta1.ClusterPodPlacementConfig) runtime.Object {
	if s.Reason != placement.SkipHigherPriority {
		return nil
	}
	if cluster != nil && s.Source == (placement.SourceRef{Kind: placement.KindClusterPodPlacementConfig, Name: cluster.Name}) {
		return cluster
	}
	// A placement rule lives in the ClusterPodPlacementConfig: its overlaps are recorded there
	// (the Event names the rule).
	if cluster != nil && s.Source.Kind == placement.KindPlacementRule {
		return cluster
	}
	for i := range configs {
		c := &configs[i]
		if s.Source == (placement.SourceRef{Kind: placement.KindPodPlacementConfig, Namespace: c.Namespace, Name: c.Name}) {
			return c
		}
	}
	return nil
}
