package operand

import (
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
	if got := Sum(s, "hits_total"); got != 6 {
		t.Errorf("sum = %v, want 6", got)
	}
	if got := Sum(s, "hits_total", "cache", "tag"); got != 5 {
		t.Errorf("tag = %v, want 5", got)
	}
	if got := ByLabel(s, "hits_total", "cache"); got["digest"] != 1 || got["tag"] != 5 {
		t.Errorf("by label = %v", got)
	}
}
