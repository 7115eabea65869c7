package components

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/archgate/archgate/operator/internal/inspect"
	gatewebhook "github.com/archgate/archgate/operator/internal/webhook"
)

// TestExportedMetricNames: every name components exports is a family the components register,
// with the labels components says (the contract the simulator reads by).
func TestExportedMetricNames(t *testing.T) {
	r := prometheus.NewRegistry()
	if err := inspect.NewMetrics().Register(r); err != nil {
		t.Fatal(err)
	}
	if err := gatewebhook.NewMetrics().Register(r); err != nil {
		t.Fatal(err)
	}
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]bool{}
	for _, f := range families {
		labels[f.GetName()] = map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[f.GetName()][l.GetName()] = true
			}
		}
	}
	for name, label := range map[string]string{
		MetricInspectCacheHits:       LabelCache,
		MetricInspectCacheMisses:     LabelCache,
		MetricInspectCacheDedupWaits: "",
		MetricInspectDuration:        LabelOutcome,
		MetricInspectErrors:          LabelInspectReason,
		MetricWebhookPodsGated:       "",
		MetricWebhookPodsSkipped:     LabelWebhookReason,
	} {
		got, ok := labels[name]
		if !ok {
			t.Errorf("%s: not registered by the components", name)
			continue
		}
		if label != "" && !got[label] {
			t.Errorf("%s: no series with label %q (labels %v)", name, label, got)
		}
	}
}
