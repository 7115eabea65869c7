//go:build integration

package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/runner"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// TestHandwrittenPassViaFloor runs no-operator's workload with a handwritten
// pass whose affinity a floor adds at admission, the floor webhook or the floor
// policy: the pods are created without it, so only the floor keeps that pass
// from misplacing what the scheduler-alone main pass misplaces.
func TestHandwrittenPassViaFloor(t *testing.T) {
	for name, via := range map[string]func(*scenario.Scenario){
		"webhook": func(s *scenario.Scenario) { s.HandwrittenViaWebhook = true },
		"policy":  func(s *scenario.Scenario) { s.HandwrittenViaPolicy = true },
	} {
		t.Run(name, func(t *testing.T) {
			loaded := loadShipped(t, "no-operator")
			loaded.Scenario.HandwrittenBaseline = true
			via(loaded.Scenario)
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
			h, m := rep.Handwritten, rep.Main
			if h == nil {
				t.Fatal("no handwritten pass in the report")
			}
			if h.BoundPods != h.Pods || h.MisplacedPods != 0 {
				t.Errorf("handwritten pass via the floor %s: %d of %d bound, %d misplaced; want all bound, none misplaced",
					name, h.BoundPods, h.Pods, h.MisplacedPods)
			}
			if m.MisplacedPods == 0 {
				t.Errorf("the scheduler-alone main pass misplaced no pod: the workload cannot show the floor's effect")
			}
			noChildrenLeft(t)
			t.Logf("misplaced: %d via the floor %s, %d without (of %d)", h.MisplacedPods, name, m.MisplacedPods, m.Pods)
		})
	}
}
