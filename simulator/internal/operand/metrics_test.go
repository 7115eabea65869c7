package operand

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCountersSurviveRestarts(t *testing.T) {
	c := NewCounters()
	newHits := func(r prometheus.Registerer) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hits_total"}, []string{"cache"})
		r.MustRegister(v)
		return v
	}
	first, retire := c.NewRegistry()
	h := newHits(first)
	h.WithLabelValues("tag").Add(3)
	retire() // the component stopped: its values are kept
	retire() // a second retire counts nothing twice
	second, _ := c.NewRegistry()
	h = newHits(second) // a restarted component registers again, from zero
	h.WithLabelValues("tag").Add(2)
	h.WithLabelValues("digest").Add(1)
	s := c.Snapshot()
	if got, err := s.Sum("hits_total"); got != 6 || err != nil {
		t.Errorf("sum = %v, %v; want 6", got, err)
	}
	if got, err := s.ByLabel("hits_total", "cache"); got["digest"] != 1 || got["tag"] != 5 || err != nil {
		t.Errorf("by label = %v, %v", got, err)
	}
	base := s
	h.WithLabelValues("tag").Add(4)
	if got, _ := c.Snapshot().Sub(base).ByLabel("hits_total", "cache"); got["tag"] != 4 || got["digest"] != 0 {
		t.Errorf("since the base: %v, want tag 4, digest 0", got)
	}
}

func TestSnapshotHistogramsAndFlat(t *testing.T) {
	c := NewCounters()
	r, _ := c.NewRegistry()
	d := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duration_seconds"}, []string{"outcome"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "entries"})
	r.MustRegister(d, g)
	d.WithLabelValues("success").Observe(0.5)
	d.WithLabelValues("error").Observe(1.5)
	g.Set(3)
	s := c.Snapshot()
	if n, err := s.Count("duration_seconds"); n != 2 || err != nil {
		t.Errorf("count = %v, %v; want 2", n, err)
	}
	if _, err := s.Family("entries"); err == nil {
		t.Error("a gauge was kept: sums of gauges across restarts mean nothing")
	}
	flat := s.Flat()
	if flat[`duration_seconds_count{outcome="error"}`] != 1 || flat[`duration_seconds_sum{outcome="success"}`] != 0.5 {
		t.Errorf("flat = %v", flat)
	}
}

func TestSnapshotMissingMetric(t *testing.T) {
	c := NewCounters()
	r, _ := c.NewRegistry()
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hits_total"}, []string{"cache"})
	r.MustRegister(v)
	v.WithLabelValues("tag").Inc()
	s := c.Snapshot()
	cases := []struct {
		name string
		read func() error
		want MissingMetricError
	}{
		{name: "renamed family", read: func() error { _, err := s.Sum("hit_total"); return err }, want: MissingMetricError{Name: "hit_total"}},
		{name: "renamed label", read: func() error { _, err := s.ByLabel("hits_total", "kind"); return err }, want: MissingMetricError{Name: "hits_total", Label: "kind"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var missing *MissingMetricError
			if err := c.read(); !errors.As(err, &missing) || *missing != c.want {
				t.Errorf("error %v, want %+v", err, c.want)
			}
		})
	}
}
