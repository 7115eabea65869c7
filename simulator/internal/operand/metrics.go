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
// start gets a fresh prometheus.Registry (a restarted component registers
// its collectors again), and the final values of a stopped instance are
// kept.
type Counters struct {
	mu    sync.Mutex
	kept  map[string]float64
	live  map[*prometheus.Registry]struct{}
	order []*prometheus.Registry
}

// NewCounters returns an empty set.
func NewCounters() *Counters {
	return &Counters{kept: map[string]float64{}, live: map[*prometheus.Registry]struct{}{}}
}

// NewRegistry returns a fresh registry whose values count until Retire.
func (c *Counters) NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	c.mu.Lock()
	c.live[r] = struct{}{}
	c.order = append(c.order, r)
	c.mu.Unlock()
	return r
}

// Retire keeps the registry's final values and stops gathering it.
func (c *Counters) Retire(r *prometheus.Registry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.live[r]; !ok {
		return
	}
	for k, v := range gather(r) {
		c.kept[k] += v
	}
	delete(c.live, r)
	c.order = slices.DeleteFunc(c.order, func(x *prometheus.Registry) bool { return x == r })
}

// Snapshot returns every counter (and histogram _count and _sum) by
// "name{label="value",…}", summed over retired and live registries. Gauges
// are left out: a sum of gauges across restarts means nothing.
func (c *Counters) Snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.kept)
	for _, r := range c.order {
		for k, v := range gather(r) {
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

func gather(r *prometheus.Registry) map[string]float64 {
	out := map[string]float64{}
	families, _ := r.Gather() // partial results are still worth keeping
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
