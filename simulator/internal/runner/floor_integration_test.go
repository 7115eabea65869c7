//go:build integration

package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/archgate/archgate/simulator/internal/runner"
)

// TestHandwrittenPassViaFloorWebhook runs no-operator's workload with a
// handwritten pass whose affinity the floor webhook adds at admission: the
// pods are created without it, so only the webhook keeps that pass from
// misplacing what the scheduler-alone main pass misplaces.
func TestHandwrittenPassViaFloorWebhook(t *testing.T) {
	loaded := loadShipped(t, "no-operator")
	loaded.Scenario.HandwrittenBaseline = true
	loaded.Scenario.HandwrittenViaWebhook = true
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
		t.Errorf("handwritten pass via the floor webhook: %d of %d bound, %d misplaced; want all bound, none misplaced",
			h.BoundPods, h.Pods, h.MisplacedPods)
	}
	if m.MisplacedPods == 0 {
		t.Errorf("the scheduler-alone main pass misplaced no pod: the workload cannot show the webhook's effect")
	}
	noChildrenLeft(t)
	t.Logf("misplaced: %d via the floor webhook, %d without (of %d)", h.MisplacedPods, m.MisplacedPods, m.Pods)
}
