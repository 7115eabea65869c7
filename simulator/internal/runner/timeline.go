package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// timeline applies a pass's events at their offsets. Every window is
// reverted when it ends or, at the latest, when the pass ends, so the next
// phase finds the system as configured.
type timeline struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	applied []report.AppliedEvent
}

// startTimeline schedules the events relative to epoch.
func (r *run) startTimeline(ctx context.Context, epoch time.Time, events []scenario.Event) *timeline {
	ctx, cancel := context.WithCancel(ctx)
	tl := &timeline{cancel: cancel}
	for _, ev := range events {
		tl.wg.Go(func() { tl.run(ctx, r, epoch, ev) })
	}
	return tl
}

// stop ends the timeline (reverting open windows) and returns what happened.
func (tl *timeline) stop() []report.AppliedEvent {
	tl.cancel()
	tl.wg.Wait()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	slices.SortFunc(tl.applied, func(a, b report.AppliedEvent) int {
		switch {
		case a.AtSeconds < b.AtSeconds:
			return -1
		case a.AtSeconds > b.AtSeconds:
			return 1
		}
		return 0
	})
	return tl.applied
}

// step is one event's effect: apply now, then revert after hold (0: no
// window).
type step struct {
	apply, revert func(context.Context) error
	hold          time.Duration
}

func (tl *timeline) run(ctx context.Context, r *run, epoch time.Time, ev scenario.Event) {
	spec, _ := json.Marshal(ev)
	rec := report.AppliedEvent{Action: ev.Action(), Spec: spec}
	defer func() {
		tl.mu.Lock()
		tl.applied = append(tl.applied, rec)
		tl.mu.Unlock()
	}()
	select {
	case <-time.After(time.Until(epoch.Add(ev.At.D()))):
	case <-ctx.Done():
		rec.AtSeconds = ev.At.D().Seconds()
		rec.Error = "not reached: the pass ended first"
		return
	}
	st := r.op.step(ev)
	rec.AtSeconds = time.Since(epoch).Seconds()
	if err := st.apply(ctx); err != nil {
		rec.Error = err.Error()
		return
	}
	if st.revert == nil {
		rec.EndSeconds = time.Since(epoch).Seconds()
		return
	}
	select {
	case <-time.After(st.hold):
	case <-ctx.Done():
	}
	// Reverting must happen even when the pass is over.
	if err := st.revert(r.op.ctx); err != nil {
		rec.Error = fmt.Sprintf("reverting: %v", err)
	}
	rec.EndSeconds = time.Since(epoch).Seconds()
}

// step builds the effect of a timeline event.
func (e *operatorEnv) step(ev scenario.Event) step {
	setFaults := func(f fakeregistry.Faults) func(context.Context) error {
		return func(context.Context) error { return e.reg.SetFaults(f) }
	}
	restore := setFaults(e.baseFaults)
	switch {
	case ev.RegistryOutage != nil:
		f := e.baseFaults
		f.Outage = fakeregistry.Outage(ev.RegistryOutage.Mode)
		return step{apply: setFaults(f), revert: restore, hold: ev.RegistryOutage.Duration.D()}
	case ev.RegistrySlowdown != nil:
		f := e.baseFaults
		f.Latency = map[fakeregistry.RequestKind]fakeregistry.Latency{fakeregistry.AllKinds: latency(ev.RegistrySlowdown.Latency)}
		return step{apply: setFaults(f), revert: restore, hold: ev.RegistrySlowdown.Duration.D()}
	case ev.RegistryErrors != nil:
		f := e.baseFaults
		applyRates(&f, ev.RegistryErrors.Rates)
		return step{apply: setFaults(f), revert: restore, hold: ev.RegistryErrors.Duration.D()}
	case ev.ControllerRestart != nil:
		stop := func(context.Context) error { e.op.Controller.Stop(); return nil }
		start := func(context.Context) error { return e.op.Controller.Start(e.ctx) }
		return step{apply: stop, revert: start, hold: ev.ControllerRestart.Downtime.D()}
	case ev.WebhookDown != nil:
		stop := func(context.Context) error { e.op.Webhook.Stop(); return nil }
		start := func(context.Context) error { return e.op.Webhook.Start(e.ctx) }
		return step{apply: stop, revert: start, hold: ev.WebhookDown.Duration.D()}
	case ev.ClusterConfigDeleted != nil:
		st := step{apply: e.deleteClusterConfig}
		if d := ev.ClusterConfigDeleted.RecreateAfter.D(); d > 0 {
			st.revert, st.hold = e.createClusterConfig, d
		}
		return st
	}
	return step{apply: func(context.Context) error { return fmt.Errorf("unknown action") }}
}
