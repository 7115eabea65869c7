package operand

import (
	"fmt"
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
	kept    Snapshot
	sources []*source
}

// source is one instance's metrics.
type source struct{ gather func() []*dto.MetricFamily }

// NewCounters returns an empty set.
func NewCounters() *Counters {
	return &Counters{kept: Snapshot{}}
}

// NewRegistry returns a fresh registry whose values count until the
// returned retire is called.
func (c *Counters) NewRegistry() (*prometheus.Registry, func()) {
	r := prometheus.NewRegistry()
	return r, c.Add(func() []*dto.MetricFamily {
		families, _ := r.Gather() // partial results are still worth keeping
		return families
	})
}

// Add counts gather's values until the returned retire, which keeps the
// final values (gathered once more) and stops gathering.
func (c *Counters) Add(gather func() []*dto.MetricFamily) (retire func()) {
	src := &source{gather: gather}
	c.mu.Lock()
	c.sources = append(c.sources, src)
	c.mu.Unlock()
	return func() {
		final := SnapshotOf(src.gather())
		c.mu.Lock()
		defer c.mu.Unlock()
		if !slices.Contains(c.sources, src) {
			return
		}
		c.kept.add(final, 1)
		c.sources = slices.DeleteFunc(c.sources, func(x *source) bool { return x == src })
	}
}

// Snapshot returns every counter and histogram, summed over retired and
// live sources.
func (c *Counters) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Snapshot{}
	out.add(c.kept, 1)
	for _, src := range c.sources {
		out.add(SnapshotOf(src.gather()), 1)
	}
	return out
}

// Snapshot holds counter values by metric family name. Gauges are left
// out: a sum of gauges across restarts means nothing.
type Snapshot map[string][]Series

// Series is one series of a counter or histogram family.
type Series struct {
	// Labels are the series' label pairs.
	Labels map[string]string
	// Value is a counter's value, or a histogram's sum of observations.
	Value float64
	// Count is a histogram's number of observations.
	Count float64
	// Histogram is true for a histogram's series.
	Histogram bool
}

// SnapshotOf reads the counters, untyped values and histograms of
// families.
func SnapshotOf(families []*dto.MetricFamily) Snapshot {
	s := Snapshot{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			sr := Series{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				sr.Labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				sr.Value = m.GetCounter().GetValue()
			case dto.MetricType_UNTYPED:
				sr.Value = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				sr.Value, sr.Count, sr.Histogram = m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount()), true
			default:
				continue
			}
			s.addSeries(f.GetName(), sr, 1)
		}
	}
	return s
}

// Sub returns s minus base, series by series: what was counted since base.
func (s Snapshot) Sub(base Snapshot) Snapshot {
	out := Snapshot{}
	out.add(s, 1)
	out.add(base, -1)
	return out
}

// add adds sign × every series of o.
func (s Snapshot) add(o Snapshot, sign float64) {
	for name, series := range o {
		for _, sr := range series {
			s.addSeries(name, sr, sign)
		}
	}
}

func (s Snapshot) addSeries(name string, sr Series, sign float64) {
	list := s[name]
	for i := range list {
		if maps.Equal(list[i].Labels, sr.Labels) {
			list[i].Value += sign * sr.Value
			list[i].Count += sign * sr.Count
			return
		}
	}
	s[name] = append(list, Series{Labels: maps.Clone(sr.Labels), Value: sign * sr.Value, Count: sign * sr.Count, Histogram: sr.Histogram})
}

// MissingMetricError is a metric the components did not export: renamed or
// removed on the operator's side, it would otherwise read as 0.
type MissingMetricError struct {
	// Name is the metric family; Label, when set, the label its series lack.
	Name, Label string
}

func (e *MissingMetricError) Error() string {
	if e.Label != "" {
		return fmt.Sprintf("metric %s: a series has no label %q (renamed on the operator's side?)", e.Name, e.Label)
	}
	return fmt.Sprintf("metric %s: not exported by the operator's components (renamed or removed?)", e.Name)
}

// Family returns the series of name, or a MissingMetricError.
func (s Snapshot) Family(name string) ([]Series, error) {
	series, ok := s[name]
	if !ok {
		return nil, &MissingMetricError{Name: name}
	}
	return series, nil
}

// Sum adds the values of every series of name.
func (s Snapshot) Sum(name string) (float64, error) {
	series, err := s.Family(name)
	var total float64
	for _, sr := range series {
		total += sr.Value
	}
	return total, err
}

// Count adds the observation counts of every series of the histogram name.
func (s Snapshot) Count(name string) (float64, error) {
	series, err := s.Family(name)
	var total float64
	for _, sr := range series {
		total += sr.Count
	}
	return total, err
}

// ByLabel sums the values of name's series by the value of label.
func (s Snapshot) ByLabel(name, label string) (map[string]float64, error) {
	series, err := s.Family(name)
	out := map[string]float64{}
	for _, sr := range series {
		v, ok := sr.Labels[label]
		if !ok {
			return out, &MissingMetricError{Name: name, Label: label}
		}
		out[v] += sr.Value
	}
	return out, err
}

// MeansByLabel divides the sum of the histogram name's observations by their count, by the
// value of label: the mean observation of each label value, with how many there were.
func (s Snapshot) MeansByLabel(name, label string) (means, counts map[string]float64, err error) {
	series, err := s.Family(name)
	sums := map[string]float64{}
	counts = map[string]float64{}
	for _, sr := range series {
		v, ok := sr.Labels[label]
		if !ok {
			return nil, nil, &MissingMetricError{Name: name, Label: label}
		}
		sums[v] += sr.Value
		counts[v] += sr.Count
	}
	means = map[string]float64{}
	for v, n := range counts {
		if n > 0 {
			means[v] = sums[v] / n
		}
	}
	return means, counts, err
}

// Flat returns every series keyed by "name{label="value",…}" (histograms
// as name_count and name_sum), the report's form.
func (s Snapshot) Flat() map[string]float64 {
	out := map[string]float64{}
	for name, series := range s {
		for _, sr := range series {
			if sr.Histogram {
				out[seriesKey(name+"_count", sr.Labels)] += sr.Count
				out[seriesKey(name+"_sum", sr.Labels)] += sr.Value
				continue
			}
			out[seriesKey(name, sr.Labels)] += sr.Value
		}
	}
	return out
}

func seriesKey(name string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteString("}")
	return b.String()
}
