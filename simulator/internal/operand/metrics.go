package operand

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Counters sums the counters of a component across its restarts: every
// start adds a source (a fresh prometheus.Registry in-process, a /metrics
// endpoint for a process), and the final values of a retired source are
// kept.
type Counters struct {
	mu      sync.Mutex
	kept    map[string]float64
	sources []*source
}

// source is one instance's metrics.
type source struct{ gather func() map[string]float64 }

// NewCounters returns an empty set.
func NewCounters() *Counters {
	return &Counters{kept: map[string]float64{}}
}

// NewRegistry returns a fresh registry whose values count until the
// returned retire is called.
func (c *Counters) NewRegistry() (*prometheus.Registry, func()) {
	r := prometheus.NewRegistry()
	return r, c.Add(func() map[string]float64 {
		families, _ := r.Gather() // partial results are still worth keeping
		return Flatten(families)
	})
}

// Add counts gather's values until the returned retire, which keeps the
// final values (gathered once more) and stops gathering.
func (c *Counters) Add(gather func() map[string]float64) (retire func()) {
	src := &source{gather: gather}
	c.mu.Lock()
	c.sources = append(c.sources, src)
	c.mu.Unlock()
	return func() {
		final := src.gather()
		c.mu.Lock()
		defer c.mu.Unlock()
		if !slices.Contains(c.sources, src) {
			return
		}
		for k, v := range final {
			c.kept[k] += v
		}
		c.sources = slices.DeleteFunc(c.sources, func(x *source) bool { return x == src })
	}
}

// Snapshot returns every counter (and histogram _count and _sum) by
// "name{label="value",…}", summed over retired and live sources. Gauges
// are left out: a sum of gauges across restarts means nothing.
func (c *Counters) Snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.kept)
	for _, src := range c.sources {
		for k, v := range src.gather() {
			out[k] += v
		}
	}
	return out
}

// Sum adds the values of the series of name whose labels include match
// (label=value pairs).
func Sum(snapshot map[string]float64, name string, match ...string) float64 {
	var total float64
	for k, v := range snapshot {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			if !strings.Contains(labels, match[i]+`="`+match[i+1]+`"`) {
				ok = false
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// ByLabel sums the series of name by the value of one label.
func ByLabel(snapshot map[string]float64, name, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range snapshot {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		_, rest, ok := strings.Cut(labels, label+`="`)
		if !ok {
			continue
		}
		val, _, _ := strings.Cut(rest, `"`)
		out[val] += v
	}
	return out
}

// Flatten turns metric families into counter values (histograms as _count
// and _sum) keyed by "name{label="value",…}"; gauges are left out.
func Flatten(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := seriesKey(f.GetName(), m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] += m.GetCounter().GetValue()
			case dto.MetricType_UNTYPED:
				out[key] += m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[seriesKey(f.GetName()+"_count", m.GetLabel())] += float64(m.GetHistogram().GetSampleCount())
				out[seriesKey(f.GetName()+"_sum", m.GetLabel())] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteString("{")
	for i, l := range labels {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(l.GetName())
		b.WriteString(`="`)
		b.WriteString(l.GetValue())
		b.WriteString(`"`)
	}
	b.WriteString("}")
	return b.String()
}
