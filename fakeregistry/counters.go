package fakeregistry

import (
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ManifestRef is a repository and the tag or digest a manifest request named.
type ManifestRef struct {
	// Repository is the repository path.
	Repository string
	// Reference is the tag or digest as the client sent it.
	Reference string
}

// ManifestCount counts the manifest requests for one reference.
type ManifestCount struct {
	// Get counts GET requests.
	Get uint64
	// Head counts HEAD requests.
	Head uint64
}

// KindStatus is a request kind and the status code it was answered with (0: aborted, no response).
type KindStatus struct {
	// Kind is the request kind.
	Kind RequestKind
	// Status is the HTTP status code, or 0 when the request ended without a response.
	Status int
}

// RepositoryKind is a repository and a kind of request that named it.
type RepositoryKind struct {
	// Repository is the repository path.
	Repository string
	// Kind is the request kind.
	Kind RequestKind
}

// Snapshot is a point-in-time copy of the counters.
type Snapshot struct {
	// Requests counts requests by kind as they arrive, before faults and auth.
	Requests map[RequestKind]uint64
	// Responses counts answered requests by kind and status; status 0 means aborted without a response
	// (client gave up, hang, reset outage).
	Responses map[KindStatus]uint64
	// Statuses counts answered requests by status over all kinds (0 as in Responses).
	Statuses map[int]uint64
	// Manifests counts manifest GET and HEAD requests by repository and reference.
	Manifests map[ManifestRef]ManifestCount
	// Repositories counts the requests that named a repository (manifests, blobs, uploads, tags), by
	// repository and kind: what each image cost the registry.
	Repositories map[RepositoryKind]uint64
	// Faults counts injected faults by kind.
	Faults map[FaultKind]uint64
	// InjectedDelay sums the injected latency by request kind.
	InjectedDelay map[RequestKind]time.Duration
}

// Total returns the number of requests counted.
func (s Snapshot) Total() uint64 {
	var n uint64
	for _, v := range s.Requests {
		n += v
	}
	return n
}

// Counters counts registry requests. It is a prometheus.Collector the caller may register on its own
// registry. Reset zeroes it; Prometheus sees that as a counter reset.
type Counters struct {
	mu        sync.Mutex
	requests  map[RequestKind]uint64
	responses map[KindStatus]uint64
	manifests map[ManifestRef]ManifestCount
	repos     map[RepositoryKind]uint64
	faults    map[FaultKind]uint64
	delay     map[RequestKind]time.Duration

	requestsDesc  *prometheus.Desc
	responsesDesc *prometheus.Desc
	manifestsDesc *prometheus.Desc
	reposDesc     *prometheus.Desc
	faultsDesc    *prometheus.Desc
	delayDesc     *prometheus.Desc
}

var _ prometheus.Collector = (*Counters)(nil)

// NewCounters returns zeroed counters.
func NewCounters() *Counters {
	c := &Counters{
		requestsDesc: prometheus.NewDesc(metricRequests,
			"Registry requests by kind, counted on arrival.", []string{"kind"}, nil),
		responsesDesc: prometheus.NewDesc(metricResponses,
			"Registry responses by request kind and status code (code \"aborted\": no response).", []string{"kind", "code"}, nil),
		manifestsDesc: prometheus.NewDesc(metricManifests,
			"Manifest requests by method, repository and reference.", []string{"method", "repository", "reference"}, nil),
		reposDesc: prometheus.NewDesc(metricRepositories,
			"Requests that named a repository, by repository and request kind.", []string{"repository", "kind"}, nil),
		faultsDesc: prometheus.NewDesc(metricFaults,
			"Injected faults by fault kind.", []string{"fault"}, nil),
		delayDesc: prometheus.NewDesc(metricDelay,
			"Injected latency by request kind.", []string{"kind"}, nil),
	}
	c.Reset()
	return c
}

// Reset zeroes every counter.
func (c *Counters) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = map[RequestKind]uint64{}
	c.responses = map[KindStatus]uint64{}
	c.manifests = map[ManifestRef]ManifestCount{}
	c.repos = map[RepositoryKind]uint64{}
	c.faults = map[FaultKind]uint64{}
	c.delay = map[RequestKind]time.Duration{}
}

// Snapshot returns a copy of the counters.
func (c *Counters) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		Requests:      maps.Clone(c.requests),
		Responses:     maps.Clone(c.responses),
		Statuses:      map[int]uint64{},
		Manifests:     maps.Clone(c.manifests),
		Repositories:  maps.Clone(c.repos),
		Faults:        maps.Clone(c.faults),
		InjectedDelay: maps.Clone(c.delay),
	}
	for ks, n := range c.responses {
		s.Statuses[ks.Status] += n
	}
	return s
}

// recordRequest counts an arriving request.
func (c *Counters) recordRequest(info requestInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[info.kind]++
	if info.repository != "" {
		c.repos[RepositoryKind{Repository: info.repository, Kind: info.kind}]++
	}
	switch info.kind {
	case KindManifestGet, KindManifestHead:
		ref := ManifestRef{Repository: info.repository, Reference: info.reference}
		mc := c.manifests[ref]
		if info.kind == KindManifestGet {
			mc.Get++
		} else {
			mc.Head++
		}
		c.manifests[ref] = mc
	}
}

// recordResponse counts the status a request was answered with.
func (c *Counters) recordResponse(kind RequestKind, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.responses[KindStatus{Kind: kind, Status: status}]++
}

// recordFault counts an injected fault and its delay.
func (c *Counters) recordFault(kind RequestKind, fault FaultKind, delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults[fault]++
	if delay > 0 {
		c.delay[kind] += delay
	}
}

// Describe sends the metric descriptors.
func (c *Counters) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requestsDesc
	ch <- c.responsesDesc
	ch <- c.manifestsDesc
	ch <- c.reposDesc
	ch <- c.faultsDesc
	ch <- c.delayDesc
}

// Collect sends the current counter values.
func (c *Counters) Collect(ch chan<- prometheus.Metric) {
	s := c.Snapshot()
	for k, v := range s.Requests {
		ch <- prometheus.MustNewConstMetric(c.requestsDesc, prometheus.CounterValue, float64(v), string(k))
	}
	for ks, v := range s.Responses {
		code := "aborted"
		if ks.Status != 0 {
			code = strconv.Itoa(ks.Status)
		}
		ch <- prometheus.MustNewConstMetric(c.responsesDesc, prometheus.CounterValue, float64(v), string(ks.Kind), code)
	}
	for ref, mc := range s.Manifests {
		if mc.Get > 0 {
			ch <- prometheus.MustNewConstMetric(c.manifestsDesc, prometheus.CounterValue, float64(mc.Get),
				http.MethodGet, ref.Repository, ref.Reference)
		}
		if mc.Head > 0 {
			ch <- prometheus.MustNewConstMetric(c.manifestsDesc, prometheus.CounterValue, float64(mc.Head),
				http.MethodHead, ref.Repository, ref.Reference)
		}
	}
	for rk, v := range s.Repositories {
		ch <- prometheus.MustNewConstMetric(c.reposDesc, prometheus.CounterValue, float64(v), rk.Repository, string(rk.Kind))
	}
	for f, v := range s.Faults {
		ch <- prometheus.MustNewConstMetric(c.faultsDesc, prometheus.CounterValue, float64(v), string(f))
	}
	for k, d := range s.InjectedDelay {
		ch <- prometheus.MustNewConstMetric(c.delayDesc, prometheus.CounterValue, d.Seconds(), string(k))
	}
}

// statusRecorder notes the status of a response as soon as the header is written, so the count is
// visible before the client sees the response.
type statusRecorder struct {
	http.ResponseWriter
	counters *Counters
	kind     RequestKind
	written  bool
}

// WriteHeader records the status and forwards it.
func (s *statusRecorder) WriteHeader(status int) {
	if !s.written && status >= 200 {
		s.written = true
		s.counters.recordResponse(s.kind, status)
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write records an implicit 200 and forwards the body.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.written {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter {
	return s.ResponseWriter
}

// wrap returns next with every request and response counted.
func (c *Counters) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		c.recordRequest(info)
		rec := &statusRecorder{ResponseWriter: w, counters: c, kind: info.kind}
		returned := false
		defer func() {
			switch {
			case rec.written:
			case returned:
				// net/http answers 200 for a handler that wrote nothing.
				c.recordResponse(info.kind, http.StatusOK)
			default:
				// Panicking with http.ErrAbortHandler: the request ends without a response.
				c.recordResponse(info.kind, 0)
			}
		}()
		next.ServeHTTP(rec, r)
		returned = true
	})
}
