package fakeregistry

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Names of the metrics Counters exports. ParseSnapshot reads them back, so that a process reading
// another registry's /metrics (the simulator against a cluster's registry process) gets the
// Snapshot an in-process caller gets.
const (
	metricRequests     = "fakeregistry_requests_total"
	metricResponses    = "fakeregistry_responses_total"
	metricManifests    = "fakeregistry_manifest_requests_total"
	metricRepositories = "fakeregistry_repository_requests_total"
	metricFaults       = "fakeregistry_injected_faults_total"
	metricDelay        = "fakeregistry_injected_delay_seconds_total"
)

// Handler serves the counters in the Prometheus text format, alone on their own registry.
func (c *Counters) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// ParseSnapshot reads the counters from the Prometheus text format of a registry's /metrics (as
// Handler writes it). Families other than the registry's are ignored.
func ParseSnapshot(r io.Reader) (Snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Snapshot{}, fmt.Errorf("parsing registry metrics: %w", err)
	}
	s := Snapshot{Requests: map[RequestKind]uint64{}, Responses: map[KindStatus]uint64{}, Statuses: map[int]uint64{},
		Manifests: map[ManifestRef]ManifestCount{}, Repositories: map[RepositoryKind]uint64{},
		Faults: map[FaultKind]uint64{}, InjectedDelay: map[RequestKind]time.Duration{}}
	var errs []error
	for _, m := range families[metricRequests].GetMetric() {
		s.Requests[RequestKind(label(m, "kind"))] += count(m)
	}
	for _, m := range families[metricResponses].GetMetric() {
		status := 0
		if code := label(m, "code"); code != "aborted" {
			if status, err = strconv.Atoi(code); err != nil {
				errs = append(errs, fmt.Errorf("%s: code %q is not a status", metricResponses, code))
				continue
			}
		}
		s.Responses[KindStatus{Kind: RequestKind(label(m, "kind")), Status: status}] += count(m)
		s.Statuses[status] += count(m)
	}
	for _, m := range families[metricManifests].GetMetric() {
		ref := ManifestRef{Repository: label(m, "repository"), Reference: label(m, "reference")}
		mc := s.Manifests[ref]
		switch method := label(m, "method"); method {
		case http.MethodGet:
			mc.Get += count(m)
		case http.MethodHead:
			mc.Head += count(m)
		default:
			errs = append(errs, fmt.Errorf("%s: method %q is neither GET nor HEAD", metricManifests, method))
		}
		s.Manifests[ref] = mc
	}
	for _, m := range families[metricRepositories].GetMetric() {
		s.Repositories[RepositoryKind{Repository: label(m, "repository"), Kind: RequestKind(label(m, "kind"))}] += count(m)
	}
	for _, m := range families[metricFaults].GetMetric() {
		s.Faults[FaultKind(label(m, "fault"))] += count(m)
	}
	for _, m := range families[metricDelay].GetMetric() {
		s.InjectedDelay[RequestKind(label(m, "kind"))] += time.Duration(m.GetCounter().GetValue() * float64(time.Second))
	}
	return s, errors.Join(errs...)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func count(m *dto.Metric) uint64 {
	return uint64(m.GetCounter().GetValue())
}

// Sub returns the counts since base, an earlier snapshot of the same counters: what happened
// between the two. A counter below its base (the counters were Reset since) counts from zero.
func (s Snapshot) Sub(base Snapshot) Snapshot {
	out := Snapshot{
		Requests:      since(s.Requests, base.Requests),
		Responses:     since(s.Responses, base.Responses),
		Statuses:      since(s.Statuses, base.Statuses),
		Repositories:  since(s.Repositories, base.Repositories),
		Faults:        since(s.Faults, base.Faults),
		InjectedDelay: since(s.InjectedDelay, base.InjectedDelay),
		Manifests:     map[ManifestRef]ManifestCount{},
	}
	for ref, mc := range s.Manifests {
		b := base.Manifests[ref]
		d := ManifestCount{Get: minus(mc.Get, b.Get), Head: minus(mc.Head, b.Head)}
		if d != (ManifestCount{}) {
			out.Manifests[ref] = d
		}
	}
	return out
}

// since subtracts base from now key by key, dropping keys that did not grow.
func since[K comparable, V uint64 | time.Duration](now, base map[K]V) map[K]V {
	out := map[K]V{}
	for k, v := range now {
		if d := minus(v, base[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// minus is now − base, or now when the counter was reset below its base.
func minus[V uint64 | time.Duration](now, base V) V {
	if base > now {
		return now
	}
	return now - base
}
