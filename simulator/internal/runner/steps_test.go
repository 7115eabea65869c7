package runner

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/scenario"
)

func TestStepStats(t *testing.T) {
	steps := []scenario.StepSpec{
		{Rate: 10, Duration: scenario.Duration(time.Second)},
		{Rate: 20, Duration: scenario.Duration(time.Second)},
		{Rate: 30, Duration: scenario.Duration(time.Second)},
	}
	ms := time.Millisecond
	for name, tc := range map[string]struct {
		warmUp        bool
		due, totals   []time.Duration
		wantSustained float64
		wantPods      []int
	}{
		"every step fast": {
			due:           []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms, 2000 * ms, 5000 * ms},
			totals:        []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms},
			wantSustained: 30,
			// The last step lasts until every pod is due.
			wantPods: []int{2, 2, 2},
		},
		"second step slow: the third does not count even when fast": {
			due:           []time.Duration{0, 1000 * ms, 2000 * ms},
			totals:        []time.Duration{10 * ms, 2 * time.Second, 10 * ms},
			wantSustained: 10,
			wantPods:      []int{1, 1, 1},
		},
		"a slow warm-up step counts neither way": {
			warmUp:        true,
			due:           []time.Duration{0, 1000 * ms, 2000 * ms},
			totals:        []time.Duration{5 * time.Second, 10 * ms, 10 * ms},
			wantSustained: 30,
			wantPods:      []int{1, 1, 1},
		},
		"an unbound pod fails its step": {
			due:           []time.Duration{0, 1000 * ms},
			totals:        []time.Duration{-1, 10 * ms},
			wantSustained: 0,
			wantPods:      []int{1, 1, 0},
		},
	} {
		t.Run(name, func(t *testing.T) {
			steps := slices.Clone(steps)
			steps[0].WarmUp = tc.warmUp
			got, sustained := stepStats(steps, tc.due, tc.totals, time.Second)
			if sustained != tc.wantSustained {
				t.Errorf("sustained = %v, want %v", sustained, tc.wantSustained)
			}
			for i, st := range got {
				if st.Pods != tc.wantPods[i] {
					t.Errorf("step %d pods = %d, want %d", i, st.Pods, tc.wantPods[i])
				}
			}
			if name == "an unbound pod fails its step" && !math.IsInf(got[0].TotalP99, 1) {
				t.Errorf("step 0 p99 = %v, want +Inf for an unbound pod", got[0].TotalP99)
			}
		})
	}
}
