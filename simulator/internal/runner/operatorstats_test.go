package runner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"

	opcomponents "github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/simulator/internal/operand"
)

// operatorMetrics registers counters under the names the operator exports
// (components), with rename applied, and returns their snapshot.
func operatorMetrics(t *testing.T, rename map[string]string) operand.Snapshot {
	t.Helper()
	name := func(n string) string {
		if r, ok := rename[n]; ok {
			return r
		}
		return n
	}
	c := operand.NewCounters()
	r, _ := c.NewRegistry()
	counter := func(n string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name(n)}, labels)
		r.MustRegister(v)
		return v
	}
	counter(opcomponents.MetricInspectCacheHits, opcomponents.LabelCache).WithLabelValues("tag").Add(9)
	counter(opcomponents.MetricInspectCacheMisses, opcomponents.LabelCache).WithLabelValues("tag").Add(1)
	counter(opcomponents.MetricInspectCacheDedupWaits).WithLabelValues().Add(2)
	counter(opcomponents.MetricInspectErrors, opcomponents.LabelInspectReason).WithLabelValues("auth").Add(1)
	counter(opcomponents.MetricWebhookPodsGated).WithLabelValues().Add(10)
	counter(opcomponents.MetricWebhookPodsSkipped, opcomponents.LabelWebhookReason).WithLabelValues("pinned").Add(3)
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name(opcomponents.MetricInspectDuration)}, []string{opcomponents.LabelOutcome})
	r.MustRegister(h)
	h.WithLabelValues("success").Observe(0.1)
	phases := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name(opcomponents.MetricPlacementPhaseDuration)}, []string{opcomponents.LabelPlacementPhase})
	r.MustRegister(phases)
	for _, s := range []float64{0.004, 0.006} {
		phases.WithLabelValues("inspection").Observe(s)
		phases.WithLabelValues("patch").Observe(2 * s)
	}
	return c.Snapshot()
}

func TestOperatorStats(t *testing.T) {
	o, err := operatorStats(operatorMetrics(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.CacheHitRate != 0.9 || o.Inspections != 1 || o.InspectionErrors["auth"] != 1 || o.WebhookGated != 10 || o.WebhookSkipped["pinned"] != 3 {
		t.Errorf("stats = %+v", o)
	}
	if diff := cmp.Diff(map[string]float64{"inspection": 0.005, "patch": 0.01}, o.PhaseMeanSeconds, cmpopts.EquateApprox(0, 1e-12)); diff != "" || o.Reconciles != 2 {
		t.Errorf("reconcile phases (-want +got):\n%s\nreconciles %v, want 2", diff, o.Reconciles)
	}
}

// TestOperatorStatsMissingMetric: a metric the operator renamed is an
// error naming it, not a silent 0.
func TestOperatorStatsMissingMetric(t *testing.T) {
	for _, m := range []string{opcomponents.MetricInspectCacheHits, opcomponents.MetricInspectDuration, opcomponents.MetricWebhookPodsSkipped, opcomponents.MetricPlacementPhaseDuration} {
		t.Run(m, func(t *testing.T) {
			_, err := operatorStats(operatorMetrics(t, map[string]string{m: m + "_renamed"}))
			if err == nil || !strings.Contains(err.Error(), m+": not exported") {
				t.Errorf("renamed %s: error %v, want one naming it", m, err)
			}
		})
	}
}

// TestCountingRestarts: a pass's counts are the restarts since counting started, by
// component, and none are reported without a kubelet (direct mode).
func TestCountingRestarts(t *testing.T) {
	for name, tc := range map[string]struct {
		kubelet                bool
		start, end             map[string]int
		wantRestarts, wantOOMs map[string]int
	}{
		"restarts before the pass are not the pass's": {
			kubelet: true, start: map[string]int{"webhook": 2}, end: map[string]int{"webhook": 3, "controller": 1},
			wantRestarts: map[string]int{"webhook": 1, "controller": 1}, wantOOMs: map[string]int{"webhook": 1, "controller": 1},
		},
		"none during the pass": {
			kubelet: true, start: map[string]int{"webhook": 2}, end: map[string]int{"webhook": 2},
			wantRestarts: map[string]int{}, wantOOMs: map[string]int{},
		},
		"direct mode has no kubelet": {},
	} {
		t.Run(name, func(t *testing.T) {
			// No metric is registered: reading them is TestOperatorStats's, and fails here.
			counters := operand.NewCounters()
			var restarts func() (map[string]int, map[string]int)
			now := tc.start
			if tc.kubelet {
				restarts = func() (map[string]int, map[string]int) { return now, now }
			}
			count := counting(counters, restarts)
			now = tc.end
			o, _ := count()
			if diff := cmp.Diff(tc.wantRestarts, o.Restarts); diff != "" {
				t.Errorf("restarts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOOMs, o.OOMKills); diff != "" {
				t.Errorf("OOM kills (-want +got):\n%s", diff)
			}
		})
	}
}
