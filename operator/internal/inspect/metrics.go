package inspect

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Cache names, the "cache" label of the cache metrics.
const (
	cacheTag    = "tag"    // references by tag: bounded TTL
	cacheDigest = "digest" // references pinned by digest: immutable
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
	evictions *prometheus.CounterVec
	entries   *entriesCollector
	duration  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
}

// NewMetrics returns unregistered inspection metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_inspect_cache_hits_total",
			Help: "Image inspections answered from the cache, by cache (tag, digest).",
		}, []string{"cache"}),
		misses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_inspect_cache_misses_total",
			Help: "Image inspections not found in the cache, by cache (tag, digest).",
		}, []string{"cache"}),
		shared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "archgate_inspect_cache_dedup_waits_total",
			Help: "Cache misses that waited for an identical inspection already in flight instead of starting their own.",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_inspect_cache_evictions_total",
			Help: "Cache entries removed, by cache (tag, digest) and reason (capacity, expired, invalidated).",
		}, []string{"cache", "reason"}),
		entries: &entriesCollector{desc: prometheus.NewDesc(
			"archgate_inspect_cache_entries",
			"Entries in the cache now, by cache (tag, digest).",
			[]string{"cache"}, nil)},
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "archgate_inspect_duration_seconds",
			Help: "Time to inspect one image in its registry (all credentials tried), by outcome (success, error).",
			// 5 ms … ~41 s: a warm registry answers in milliseconds, a slow one within the per-image timeout.
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_inspect_errors_total",
			Help: "Failed image inspections, by reason (auth, not-found, timeout, network, rate-limited, invalid-reference, other).",
		}, []string{"reason"}),
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
	return m
}

// Register registers all collectors with r. An already registered collector is an error.
func (m *Metrics) Register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.hits, m.misses, m.shared, m.evictions, m.entries, m.duration, m.errors} {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}

// observeInspection records one registry inspection: its duration and, on failure, its reason.
// Canceled inspections are not registry failures and are not counted as errors.
func (m *Metrics) observeInspection(seconds float64, reason Reason) {
	outcome := "success"
	if reason != "" {
		outcome = "error"
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
