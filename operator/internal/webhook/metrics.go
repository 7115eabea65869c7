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

package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/archgate/archgate/operator/internal/collectors"
	"github.com/archgate/archgate/operator/internal/placement"
)

// Metric and label names of the webhook, re-exported by pkg/components for readers outside the
// operator (the simulator): a rename here changes what they read, or fails them, never
// silently reads 0.
const (
	MetricRequestDuration  = "archgate_webhook_request_duration_seconds"
	MetricPodsProcessed    = "archgate_webhook_pods_processed_total"
	MetricPodsGated        = "archgate_webhook_pods_gated_total"
	MetricPodsSkipped      = "archgate_webhook_pods_skipped_total"
	MetricFailedIntercepts = "archgate_webhook_failed_intercepts_total"
	// LabelResult labels MetricRequestDuration; LabelReason MetricPodsSkipped.
	LabelResult = "result"
	LabelReason = "reason"
)

// Results of a webhook request, the values of the "result" label of the duration histogram.
const (
	resultGated   = "gated"
	resultPlaced  = "placed"
	resultSkipped = "skipped"
	resultError   = "error"
)

// Metrics are the scheduling-gate webhook's Prometheus collectors. They are not registered
// anywhere until Register is called, so tests and the simulator can use their own registries.
//
// Every request handled is counted once in archgate_webhook_pods_processed_total and once in
// exactly one of archgate_webhook_pods_gated_total, archgate_webhook_pods_placed_total or
// archgate_webhook_pods_skipped_total; a pod
// the webhook could not evaluate (skipped as "undecodable") is also counted in
// archgate_webhook_failed_intercepts_total. The handler never denies, so there are no error
// responses to count.
type Metrics struct {
	requestDuration  *prometheus.HistogramVec
	podsProcessed    prometheus.Counter
	podsGated        prometheus.Counter
	podsPlaced       *prometheus.CounterVec
	placeErrors      prometheus.Counter
	placementsUndone prometheus.Counter
	sourcesSkipped   *prometheus.CounterVec
	podsSkipped      *prometheus.CounterVec
	failedIntercepts prometheus.Counter
}

// NewMetrics returns unregistered webhook metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: MetricRequestDuration,
			Help: "Time the scheduling-gate webhook took to decide on an admission request, " +
				"excluding the HTTP and AdmissionReview decoding done by the webhook server, by result (gated, skipped, error).",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		}, []string{LabelResult}),
		podsProcessed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricPodsProcessed,
			Help: "Admission requests handled by the scheduling-gate webhook.",
		}),
		podsGated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricPodsGated,
			Help: "Pods that the webhook gave the scheduling gate.",
		}),
		podsPlaced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_webhook_pods_placed_total",
			Help: "Pods the webhook placed at admission, without the gate, because the controller had published all their images, by outcome (the multiarch.openshift.io/placement label value).",
		}, []string{"outcome"}),
		sourcesSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_webhook_preference_sources_skipped_total",
			Help: "Placement configurations whose preferred weights were skipped for a pod placed at admission, by reason (HigherPriorityConfig; " +
				"pods whose own preference conflicts are gated, and counted by the controller).",
		}, []string{"reason"}),
		placeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "archgate_webhook_placement_errors_total",
			Help: "Pods gated because admission placement could not read the placement configurations.",
		}),
		placementsUndone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "archgate_webhook_placements_undone_total",
			Help: "Pods placed at admission that came back to the webhook changed (another mutating webhook rewrote them, or they copy a placed pod): " +
				"the webhook took its placement off and decided again on the pod as it was then.",
		}),
		podsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPodsSkipped,
			Help: "Admission requests the webhook let through unchanged, by reason.",
		}, []string{LabelReason}),
		failedIntercepts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricFailedIntercepts,
			Help: "Pod creations the webhook failed to evaluate; they are admitted without the gate (the webhook never denies). " +
				"Calls that never reached the webhook are counted by the apiserver (apiserver_admission_webhook_fail_open_count).",
		}),
	}
	// Create every known series up front so that they read 0 rather than being absent.
	for _, r := range []string{resultGated, resultPlaced, resultSkipped, resultError} {
		m.requestDuration.WithLabelValues(r)
	}
	for _, r := range SkipReasons() {
		m.podsSkipped.WithLabelValues(string(r))
	}
	for _, o := range []placement.Outcome{placement.OutcomeArchSet, placement.OutcomeUserPinned, placement.OutcomeAnyArchitecture} {
		m.podsPlaced.WithLabelValues(o.LabelValue())
	}
	return m
}

// Register registers every collector with r; it returns the errors of those that failed, joined.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return collectors.Register(r, m.requestDuration, m.podsProcessed, m.podsGated, m.podsPlaced, m.placeErrors, m.placementsUndone, m.sourcesSkipped, m.podsSkipped, m.failedIntercepts)
}

// observe records one handled request.
func (m *Metrics) observe(d decision, elapsed time.Duration) {
	m.podsProcessed.Inc()
	if d.undone {
		m.placementsUndone.Inc()
	}
	switch {
	case d.err != nil:
		m.podsSkipped.WithLabelValues(string(d.skip)).Inc()
		m.failedIntercepts.Inc()
		m.requestDuration.WithLabelValues(resultError).Observe(elapsed.Seconds())
	case d.skip != "":
		m.podsSkipped.WithLabelValues(string(d.skip)).Inc()
		m.requestDuration.WithLabelValues(resultSkipped).Observe(elapsed.Seconds())
	case d.placed != nil:
		m.podsPlaced.WithLabelValues(d.placed.Outcome.LabelValue()).Inc()
		for _, s := range d.placed.Preferred.SkippedSources {
			m.sourcesSkipped.WithLabelValues(string(s.Reason)).Inc()
		}
		m.requestDuration.WithLabelValues(resultPlaced).Observe(elapsed.Seconds())
	default:
		if d.placeErr != nil {
			m.placeErrors.Inc()
		}
		m.podsGated.Inc()
		m.requestDuration.WithLabelValues(resultGated).Observe(elapsed.Seconds())
	}
}
