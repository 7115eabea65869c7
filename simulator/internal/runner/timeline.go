package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

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

// startTimeline schedules the events relative to epoch, for the pass of passCtx; ctx outlives
// the pass: windows are reverted under it, and components started again run under it.
func (r *run) startTimeline(ctx, passCtx context.Context, epoch time.Time, events []scenario.Event) *timeline {
	passCtx, cancel := context.WithCancel(passCtx)
	tl := &timeline{cancel: cancel}
	for _, ev := range events {
		tl.wg.Go(func() { tl.run(ctx, passCtx, epoch, ev, r.step) })
	}
	return tl
}

// step builds a timeline event's step: the components' (and their configuration's), else the
// cluster's (its registry's); ctx outlives the pass.
func (r *run) step(ctx context.Context, ev scenario.Event, epoch time.Time, rec *report.AppliedEvent) step {
	if st, ok := r.comps.step(ctx, ev, epoch, rec); ok {
		return st
	}
	if st, ok := r.cluster.step(ev); ok {
		return st
	}
	return step{apply: func(context.Context) error { return fmt.Errorf("unknown action") }}
}

// stepBuilder builds a timeline event's step (run.step).
type stepBuilder func(ctx context.Context, ev scenario.Event, epoch time.Time, rec *report.AppliedEvent) step

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
// window). effect, when set, runs once the window is over and says what the
// event observably did; an error means it did nothing (an outage no request
// met), which fails the run.
type step struct {
	apply, revert func(context.Context) error
	// hold is how long after apply the step reverts, or (without revert) its effect is
	// looked for; the pass's end cuts it short.
	hold   time.Duration
	effect func() (string, error)
}

// run applies ev at its offset under passCtx and reverts it under ctx, which outlives the pass.
func (tl *timeline) run(ctx, passCtx context.Context, epoch time.Time, ev scenario.Event, build stepBuilder) {
	spec, _ := json.Marshal(ev)
	rec := report.AppliedEvent{Action: ev.Action(), Spec: spec}
	defer func() {
		tl.mu.Lock()
		tl.applied = append(tl.applied, rec)
		tl.mu.Unlock()
	}()
	select {
	case <-time.After(time.Until(epoch.Add(ev.At.D()))):
	case <-passCtx.Done():
		rec.AtSeconds = ev.At.D().Seconds()
		rec.Error = "not reached: the pass ended first"
		return
	}
	st := build(ctx, ev, epoch, &rec)
	rec.AtSeconds = time.Since(epoch).Seconds()
	if err := st.apply(passCtx); err != nil {
		rec.Error = err.Error()
		return
	}
	if st.revert != nil || st.hold > 0 {
		select {
		case <-time.After(st.hold):
		case <-passCtx.Done():
		}
		// Reverting must happen even when the pass is over.
		if st.revert != nil {
			if err := st.revert(ctx); err != nil {
				rec.Error = fmt.Sprintf("reverting: %v", err)
			}
		}
	}
	rec.EndSeconds = time.Since(epoch).Seconds()
	if st.effect != nil && rec.Error == "" {
		effect, err := st.effect()
		if err != nil {
			rec.Error = "no observable effect: " + err.Error()
		}
		rec.Effect = effect
	}
}
