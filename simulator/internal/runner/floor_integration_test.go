//go:build integration

package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/runner"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestHandwrittenPassViaFloor runs no-operator's workload with a pass whose affinity a floor
// adds at admission: the handwritten pass through the floor webhook (handwrittenViaWebhook),
// or a floor pass of its own through the floor policy beside the plain handwritten pass
// (floorBaseline). The floor's pods are created without the affinity, so only the floor keeps
// that pass from misplacing what the scheduler-alone main pass misplaces. With floorGate the
// floor also gates the first pods of each image and releases every one of them.
func TestHandwrittenPassViaFloor(t *testing.T) {
	for name, tc := range map[string]struct {
		set   func(*scenario.Scenario)
		floor func(*report.Report) *report.Pass
		gates bool
	}{
		"webhook": {
			set:   func(s *scenario.Scenario) { s.HandwrittenViaWebhook = true },
			floor: func(r *report.Report) *report.Pass { return r.Handwritten },
		},
		"policy": {
			set:   func(s *scenario.Scenario) { s.FloorBaseline = scenario.FloorPolicy },
			floor: func(r *report.Report) *report.Pass { return r.Floor },
		},
		"policy and gate": {
			set:   func(s *scenario.Scenario) { s.FloorBaseline, s.FloorGate = scenario.FloorPolicy, true },
			floor: func(r *report.Report) *report.Pass { return r.Floor },
			gates: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			loaded := loadShipped(t, "no-operator")
			loaded.Scenario.HandwrittenBaseline = true
			tc.set(loaded.Scenario)
			loaded.Scenario.Workload.Pods = 600
			loaded.Checks = nil
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			rep, err := runner.Run(ctx, runner.Options{Scenario: loaded})
			if err != nil {
				t.Fatalf("run failed: %v", err)
			}
			for _, e := range rep.Errors {
				t.Errorf("run error: %s", e)
			}
			h, m := tc.floor(rep), rep.Main
			if h == nil || rep.Handwritten == nil {
				t.Fatalf("want a handwritten pass and the floor's in the report, got handwritten %v, floor %v", rep.Handwritten != nil, h != nil)
			}
			for _, p := range []*report.Pass{rep.Handwritten, h} {
				if p.BoundPods != p.Pods || p.MisplacedPods != 0 {
					t.Errorf("%s pass (floor %s): %d of %d bound, %d misplaced; want all bound, none misplaced",
						p.Name, name, p.BoundPods, p.Pods, p.MisplacedPods)
				}
			}
			if held := h.Latency["gateHold"].N; (held > 0) != tc.gates || h.GatedAtEnd != 0 {
				t.Errorf("floor %s: %d pods held the gate, %d gated at the end; want gated pods %v, none left gated", name, held, h.GatedAtEnd, tc.gates)
			}
			if m.MisplacedPods == 0 {
				t.Errorf("the scheduler-alone main pass misplaced no pod: the workload cannot show the floor's effect")
			}
			noChildrenLeft(t)
			t.Logf("misplaced: %d via the floor %s, %d without (of %d)", h.MisplacedPods, name, m.MisplacedPods, m.Pods)
		})
	}
}
