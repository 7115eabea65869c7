package workload

import (
	"time"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Arrivals returns when each of n pods is due, as offsets from the start of
// the pass: all at 0 for a burst, evenly spaced for a rate, and for steps
// evenly spaced within each step at its rate, the last step lasting until
// every pod is due.
func Arrivals(a scenario.ArrivalSpec, n int) []time.Duration {
	out := make([]time.Duration, n)
	switch a.Mode {
	case scenario.ArrivalRate:
		for i := range out {
			out[i] = time.Duration(float64(i) / a.Rate * float64(time.Second))
		}
	case scenario.ArrivalSteps:
		i := 0
		var start time.Duration
		for s, step := range a.Steps {
			last := s == len(a.Steps)-1
			for k := 0; i < n; k++ {
				at := start + time.Duration(float64(k)/step.Rate*float64(time.Second))
				if !last && at >= start+step.Duration.D() {
					break
				}
				out[i] = at
				i++
			}
			start += step.Duration.D()
		}
	}
	return out
}
