package runner

import (
	"math"
	"time"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/stats"
)

// stepStats groups pods by the arrival step they were due in and
// summarises each step's total latency; a pod that never bound counts as
// infinitely late. sustained is the highest step rate before the first step
// whose p99 exceeds limit (later steps carry that step's backlog, so they
// say nothing of their own rate); warm-up steps count neither way. totals holds each pod's total latency,
// negative when it did not bind; due its arrival offset.
func stepStats(steps []scenario.StepSpec, due, totals []time.Duration, limit time.Duration) (out []report.StepStats, sustained float64) {
	var start time.Duration
	failed := false
	for s, st := range steps {
		end := start + st.Duration.D()
		last := s == len(steps)-1
		var lat []float64
		unbound := 0
		for i, at := range due {
			if at < start || (!last && at >= end) {
				continue
			}
			if totals[i] < 0 {
				lat = append(lat, math.Inf(1))
				unbound++
				continue
			}
			lat = append(lat, totals[i].Seconds())
		}
		sum := stats.Summarize(lat)
		ok := len(lat) > 0 && sum.P99 <= limit.Seconds()
		out = append(out, report.StepStats{Rate: st.Rate, StartSeconds: start.Seconds(), Pods: len(lat),
			Unbound: unbound, TotalP50: sum.P50, TotalP99: sum.P99, Sustained: ok && !failed && !st.WarmUp, WarmUp: st.WarmUp})
		switch {
		case st.WarmUp:
		case ok && !failed:
			sustained = max(sustained, st.Rate)
		default:
			failed = true
		}
		start = end
	}
	return out, sustained
}
