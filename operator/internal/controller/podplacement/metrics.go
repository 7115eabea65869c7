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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
)

// Results of a pod's inspection attempt and of a pod patch, the "result" labels.
const (
	resultSuccess  = "success"
	resultError    = "error"
	resultConflict = "conflict"
)

// MetricReconcilePhaseDuration is the histogram of the time a reconcile spends in each phase,
// by LabelPhase; readers outside the operator (the simulator's report) name it by these.
const (
	MetricReconcilePhaseDuration = "archgate_placement_reconcile_phase_duration_seconds"
	LabelPhase                   = "phase"
)

// gaugeListTimeout bounds the cache read behind the gated-pods gauges at scrape time.
const gaugeListTimeout = 2 * time.Second

// Metrics are the pod placement controller's Prometheus collectors. Nothing is registered until
// Register (or the caller registering Collectors) — tests and the simulator use their own
// registries. The gated-pods gauges are computed from the informer cache at scrape time, so
// they cannot drift from what the controller sees.
type Metrics struct {
	inspectionDuration *prometheus.HistogramVec
	phaseDuration      *prometheus.HistogramVec
	podsProcessed      *prometheus.CounterVec
	inspectionErrors   *prometheus.CounterVec
	retries            prometheus.Counter
	namespaceDeferrals prometheus.Counter
	patches            *prometheus.CounterVec
	events             *prometheus.CounterVec
	sourcesSkipped     *prometheus.CounterVec
	fallbacks          *prometheus.CounterVec
	ruleEvaluations    *prometheus.CounterVec
	gated              *gatedCollector
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		inspectionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "archgate_placement_inspection_duration_seconds",
			Help: "Time to inspect all images of one pod (cache hits included), per attempt, by result (success, error).",
			// 0.5 ms … ~33 s: cache hits take microseconds to a millisecond, registries up to the timeout.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 17),
		}, []string{"result"}),
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: MetricReconcilePhaseDuration,
			Help: "Time a pod's reconcile spent in each phase (config, credentials, inspection, placement, patch: the pod write), " +
				"so that a slow gate removal shows where it waits.",
			// 0.05 ms … ~3.3 s: cache reads take microseconds, the write and the registries milliseconds.
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 17),
		}, []string{LabelPhase}),
		podsProcessed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_pods_processed_total",
			Help: "Pods whose scheduling gate the controller removed, by outcome (the multiarch.openshift.io/placement label value).",
		}, []string{"outcome"}),
		inspectionErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_inspection_errors_total",
			Help: "Images that failed inspection in a pod's attempt, by reason (auth, not-found, timeout, network, rate-limited, invalid-reference, blocked, circuit-open, other).",
		}, []string{"reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "archgate_placement_inspection_retries_total",
			Help: "Inspection retries scheduled with backoff after a failed attempt.",
		}),
		namespaceDeferrals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "archgate_placement_namespace_deferrals_total",
			Help: "Pod reconciles put back for a moment because the pod's namespace already held its share of the workers (--namespace-workers).",
		}),
		patches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_pod_patches_total",
			Help: "Pod writes (one per ungated pod in the normal case), by result (success, conflict, error).",
		}, []string{"result"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_events_total",
			Help: "Events recorded on pods (each is one more apiserver write), by reason.",
		}, []string{"reason"}),
		sourcesSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_preference_sources_skipped_total",
			Help: "Placement configurations whose preferred weights were skipped for a pod, by reason (PodPreference, HigherPriorityConfig).",
		}, []string{"reason"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_fallback_pods_total",
			Help: "Pods whose images could not be inspected that were placed on the ClusterPodPlacementConfig's fallbackArchitecture, by architecture.",
		}, []string{"architecture"}),
		ruleEvaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_rule_evaluations_total",
			Help: "Evaluations of the ClusterPodPlacementConfig's placement rules for the pods the controller placed, by rule (its name) and " +
				"result (matched, unmatched, error: the rule could not be evaluated, did not apply, and the pod got a Warning Event PlacementRuleFailed).",
		}, []string{"rule", "result"}),
		gated: &gatedCollector{
			count: prometheus.NewDesc("archgate_placement_gated_pods",
				"Pods labelled gated by the webhook and not yet released (the controller's cache of gated pods' metadata).", nil, nil),
			oldest: prometheus.NewDesc("archgate_placement_oldest_gated_pod_age_seconds",
				"Age of the oldest pod that carries the scheduling gate (0 when none); a growing value means pods are stuck.", nil, nil),
		},
	}
	for _, o := range []placement.Outcome{placement.OutcomeArchSet, placement.OutcomeUserPinned, placement.OutcomeAnyArchitecture,
		placement.OutcomeNoCommonArch, placement.OutcomeInspectionFailed, placement.OutcomeGateAgeExceeded} {
		m.podsProcessed.WithLabelValues(o.LabelValue())
	}
	for _, r := range inspect.Reasons() {
		m.inspectionErrors.WithLabelValues(string(r))
	}
	for _, r := range []string{resultSuccess, resultError} {
		m.inspectionDuration.WithLabelValues(r)
	}
	for _, r := range []string{resultSuccess, resultConflict, resultError} {
		m.patches.WithLabelValues(r)
	}
	for _, p := range []string{phaseConfig, phaseCredentials, phaseInspection, phasePlacement, phasePatch} {
		m.phaseDuration.WithLabelValues(p)
	}
	for _, a := range v1beta1.SupportedArchitectures() {
		m.fallbacks.WithLabelValues(a)
	}
	for _, r := range []string{reasonInspectionFailed, reasonNoCommonArchitecture, reasonPreferenceSkipped, reasonFallbackArchitecture, reasonPlacementRuleFailed} {
		m.events.WithLabelValues(r)
	}
	for _, r := range []placement.SkipReason{placement.SkipPodPreference, placement.SkipHigherPriority} {
		m.sourcesSkipped.WithLabelValues(string(r))
	}
	return m
}

// Collectors returns every collector, for callers that register them with their own policy.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.inspectionDuration, m.phaseDuration, m.podsProcessed, m.inspectionErrors, m.retries, m.namespaceDeferrals,
		m.patches, m.events, m.sourcesSkipped, m.fallbacks, m.ruleEvaluations, m.gated}
}

// gatedCollector reports the gated pods found in the controller's cache at scrape time.
type gatedCollector struct {
	count, oldest *prometheus.Desc
	mu            sync.Mutex
	reader        client.Reader
	now           func() time.Time
}

func (c *gatedCollector) attach(reader client.Reader, now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.now = reader, now
}

func (c *gatedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
}

// gatedPods lists the metadata of the pods labelled gated from the controller's cache, without
// a deep copy: callers only read it. The controller keeps the label true (releaseStrayLabel).
func gatedPods(ctx context.Context, reader client.Reader) (*metav1.PartialObjectMetadataList, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	err := reader.List(ctx, pods, client.MatchingLabels{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}, client.UnsafeDisableDeepCopy)
	return pods, err
}

func (c *gatedCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, now := c.reader, c.now
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), gaugeListTimeout)
	defer cancel()
	// A pod still held by a namespace's local gate is counted, as it is gated.
	pods, err := gatedPods(ctx, reader)
	if err != nil {
		return // not synced yet or shutting down: no sample rather than a wrong one
	}
	n, oldest := len(pods.Items), 0.0
	t := now()
	for i := range pods.Items {
		oldest = max(oldest, t.Sub(pods.Items[i].CreationTimestamp.Time).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, oldest)
}
