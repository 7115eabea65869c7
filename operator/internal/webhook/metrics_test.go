/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package webhook

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestMetricsRegister(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	m.observe(decision{skip: SkipUndecodable, err: errors.New("bad")}, time.Millisecond)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	want := []string{
		"archgate_webhook_failed_intercepts_total",
		"archgate_webhook_placement_errors_total",
		"archgate_webhook_placements_undone_total",
		"archgate_webhook_pods_gated_total",
		"archgate_webhook_pods_placed_total",
		"archgate_webhook_pods_processed_total",
		"archgate_webhook_pods_skipped_total",
		"archgate_webhook_request_duration_seconds",
	}
	slices.Sort(names)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("registered families (-want +got):\n%s", diff)
	}
	if err := m.Register(reg); err == nil {
		t.Error("registering twice did not fail")
	}
}
