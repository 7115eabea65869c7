package runner

import (
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// schedulerSLIMetric is the embedded scheduler's end-to-end scheduling
// latency histogram (from entering the scheduling queue, i.e. after the gate
// is removed, to bound), registered in the process-wide legacy registry.
const schedulerSLIMetric = "scheduler_pod_scheduling_sli_duration_seconds"

// schedulerSLI reads the histogram's cumulative buckets from the
// scheduler's metrics, summed over its "attempts" label.
func schedulerSLI(families []*dto.MetricFamily) []stats.Bucket {
	byBound := map[float64]float64{}
	for _, f := range families {
		if f.GetName() != schedulerSLIMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			explicitInf := false
			for _, b := range h.GetBucket() {
				byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				explicitInf = explicitInf || math.IsInf(b.GetUpperBound(), 1)
			}
			// The text format (a scheduler process) lists the +Inf bucket;
			// a registry's own histogram leaves it implicit in the count.
			if !explicitInf {
				byBound[math.Inf(1)] += float64(h.GetSampleCount())
			}
		}
	}
	out := make([]stats.Bucket, 0, len(byBound))
	for ub, n := range byBound {
		out = append(out, stats.Bucket{UpperBound: ub, Count: n})
	}
	slices.SortFunc(out, func(a, b stats.Bucket) int {
		switch {
		case a.UpperBound < b.UpperBound:
			return -1
		case a.UpperBound > b.UpperBound:
			return 1
		}
		return 0
	})
	return out
}

// sliDelta is the histogram over a pass: after minus before.
func sliDelta(before, after []stats.Bucket) *report.HistogramStats {
	prev := map[float64]float64{}
	for _, b := range before {
		prev[b.UpperBound] = b.Count
	}
	delta := make([]stats.Bucket, len(after))
	for i, b := range after {
		delta[i] = stats.Bucket{UpperBound: b.UpperBound, Count: b.Count - prev[b.UpperBound]}
	}
	if len(delta) == 0 || delta[len(delta)-1].Count <= 0 {
		return nil
	}
	return &report.HistogramStats{
		Count: delta[len(delta)-1].Count,
		P50:   stats.HistogramQuantile(0.50, delta),
		P99:   stats.HistogramQuantile(0.99, delta),
	}
}
