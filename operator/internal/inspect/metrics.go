package inspect

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/archgate/archgate/operator/internal/collectors"
)

// Metric and label names of inspection, re-exported by pkg/components for readers outside the
// operator (the simulator): a rename here changes what they read, or fails them, never
// silently reads 0.
const (
	MetricCacheHits   = "archgate_inspect_cache_hits_total"
	MetricCacheMisses = "archgate_inspect_cache_misses_total"
	// MetricFailureHits counts inspections answered with a remembered failure.
	MetricFailureHits     = "archgate_inspect_failure_cache_hits_total"
	MetricCacheDedupWaits = "archgate_inspect_cache_dedup_waits_total"
	MetricCacheEvictions  = "archgate_inspect_cache_evictions_total"
	MetricCacheEntries    = "archgate_inspect_cache_entries"
	MetricDuration        = "archgate_inspect_duration_seconds"
	MetricErrors          = "archgate_inspect_errors_total"
	// MetricCircuitOpenings counts registry hosts' circuits opening; MetricCircuitRejections
	// the inspections an open circuit failed at once. Neither has a host label: hosts are the
	// tenants' to name, and a label per host would let them grow the series without bound.
	MetricCircuitOpenings   = "archgate_inspect_circuit_openings_total"
	MetricCircuitRejections = "archgate_inspect_circuit_rejections_total"
	// LabelCache labels the cache metrics (tag, digest); LabelReason MetricErrors and
	// MetricCacheEvictions; LabelOutcome MetricDuration (success, error).
	LabelCache   = "cache"
	LabelReason  = "reason"
	LabelOutcome = "outcome"
)

// Cache names, the "cache" label of the cache metrics.
const (
	cacheTag    = "tag"    // references by tag: bounded TTL
	cacheDigest = "digest" // references pinned by digest: immutable

)

// Outcomes of an inspection, the "outcome" label of archgate_inspect_duration_seconds.
const (
	outcomeSuccess = "success"
	outcomeError   = "error"
)

// Eviction reasons, the "reason" label of archgate_inspect_cache_evictions_total.
const (
	evictCapacity    = "capacity"
	evictExpired     = "expired"
	evictInvalidated = "invalidated"
)

// Metrics are the Prometheus collectors of image inspection and its cache. Create them with
// NewMetrics, hand the same value to Options and CacheOptions, and Register them once.
// Nothing is registered globally. One Metrics serves one CachingInspector.
type Metrics struct {
	hits      *prometheus.CounterVec
	misses    *prometheus.CounterVec
	shared    prometheus.Counter
	failHits  prometheus.Counter
	evictions *prometheus.CounterVec
	entries   *entriesCollector
	duration  *prometheus.HistogramVec
	errors    *prometheus.CounterVec

	circuitOpenings   prometheus.Counter
	circuitRejections prometheus.Counter
}

// NewMetrics returns unregistered inspection metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCacheHits,
			Help: "Image inspections answered from the cache, by cache (tag, digest).",
		}, []string{LabelCache}),
		misses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCacheMisses,
			Help: "Image inspections not found in the cache, by cache (tag, digest).",
		}, []string{LabelCache}),
		failHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricFailureHits,
			Help: "Image inspections answered with a failure remembered for the same reference and credentials (failureCacheTTL), instead of asking the registry again.",
		}),
		shared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricCacheDedupWaits,
			Help: "Cache misses that waited for an identical inspection already in flight instead of starting their own.",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCacheEvictions,
			Help: "Cache entries removed, by cache (tag, digest) and reason (capacity, expired, invalidated).",
		}, []string{LabelCache, LabelReason}),
		entries: &entriesCollector{desc: prometheus.NewDesc(
			MetricCacheEntries,
			"Entries in the cache now, by cache (tag, digest).",
			[]string{LabelCache}, nil)},
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: MetricDuration,
			Help: "Time to inspect one image in its registry (all credentials tried), by outcome (success, error).",
			// 5 ms … ~41 s: a warm registry answers in milliseconds, a slow one within the per-image timeout.
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{LabelOutcome}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricErrors,
			Help: "Failed image inspections, by reason (auth, not-found, timeout, network, rate-limited, invalid-reference, blocked, circuit-open, other).",
		}, []string{LabelReason}),
		circuitOpenings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricCircuitOpenings,
			Help: "Times a registry host's circuit opened: its inspections timed out too many times in a row.",
		}),
		circuitRejections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricCircuitRejections,
			Help: "Image inspections failed at once because their registry host's circuit was open.",
		}),
	}
	// Start every known series at zero so dashboards see them before the first event.
	for _, c := range []string{cacheTag, cacheDigest} {
		m.hits.WithLabelValues(c)
		m.misses.WithLabelValues(c)
		for _, r := range []string{evictCapacity, evictExpired, evictInvalidated} {
			m.evictions.WithLabelValues(c, r)
		}
	}
	for _, r := range Reasons() {
		m.errors.WithLabelValues(string(r))
	}
	for _, o := range []string{outcomeSuccess, outcomeError} {
		m.duration.WithLabelValues(o)
	}
	return m
}

// Register registers all collectors with r. An already registered collector is an error.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return collectors.Register(r, m.hits, m.misses, m.failHits, m.shared, m.evictions, m.entries, m.duration, m.errors,
		m.circuitOpenings, m.circuitRejections)
}

// observeInspection records one registry inspection: its duration and, on failure, its reason.
// Canceled inspections are not registry failures and are not counted as errors; one refused
// for a busy registry never started, so it is counted without a duration.
func (m *Metrics) observeInspection(seconds float64, reason Reason) {
	if reason == ReasonRegistryBusy {
		m.errors.WithLabelValues(string(reason)).Inc()
		return
	}
	outcome := outcomeSuccess
	if reason != "" {
		outcome = outcomeError
	}
	m.duration.WithLabelValues(outcome).Observe(seconds)
	if reason != "" && reason != ReasonCanceled {
		m.errors.WithLabelValues(string(reason)).Inc()
	}
}

// entriesCollector reports cache sizes read from the cache at scrape time, so the gauge
// cannot drift from the cache's real state.
type entriesCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	size func() map[string]int
}

func (c *entriesCollector) attach(size func() map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.size = size
}

func (c *entriesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *entriesCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	size := c.size
	c.mu.Unlock()
	if size == nil {
		return
	}
	for cache, n := range size() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), cache)
	}
}
