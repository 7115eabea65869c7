package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/pkg/components"
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
	var st step
	switch {
	case ev.ControllerRestart != nil:
		rec.Failover = &report.Failover{}
		st = r.op.controllerRestart(ev.ControllerRestart, epoch, rec.Failover)
	case r.op.kubelet != nil && ev.ControllerDown != nil:
		rec.Registration = &report.Registration{}
		st = r.op.componentDown(components.ControllerDeploymentName, ev.ControllerDown.Duration.D(), rec.Registration)
	case r.op.kubelet != nil && ev.WebhookDown != nil:
		rec.Registration = &report.Registration{}
		st = r.op.componentDown(components.WebhookDeploymentName, ev.WebhookDown.Duration.D(), rec.Registration)
	default:
		st = r.op.step(ev)
	}
	rec.AtSeconds = time.Since(epoch).Seconds()
	if err := st.apply(ctx); err != nil {
		rec.Error = err.Error()
		return
	}
	if st.revert != nil || st.hold > 0 {
		select {
		case <-time.After(st.hold):
		case <-ctx.Done():
		}
		// Reverting must happen even when the pass is over.
		if st.revert != nil {
			if err := st.revert(r.op.ctx); err != nil {
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

// step builds the effect of a timeline event other than controllerRestart.
func (e *operatorEnv) step(ev scenario.Event) step {
	switch {
	case ev.RegistryOutage != nil:
		f := e.baseFaults
		f.Outage = fakeregistry.Outage(ev.RegistryOutage.Mode)
		return e.faultWindow(f, ev.RegistryOutage.Duration.D(), fakeregistry.FaultOutage)
	case ev.RegistrySlowdown != nil:
		f := e.baseFaults
		f.Latency = map[fakeregistry.RequestKind]fakeregistry.Latency{fakeregistry.AllKinds: latency(ev.RegistrySlowdown.Latency)}
		return e.faultWindow(f, ev.RegistrySlowdown.Duration.D(), fakeregistry.FaultLatency)
	case ev.RegistryErrors != nil:
		f := e.baseFaults
		applyRates(&f, ev.RegistryErrors.Rates)
		return e.faultWindow(f, ev.RegistryErrors.Duration.D(),
			fakeregistry.FaultServerError, fakeregistry.FaultTooManyRequests, fakeregistry.FaultHang)
	case ev.ImagesDeleted != nil:
		return e.deleteImages(*ev.ImagesDeleted)
	case ev.WebhookDown != nil:
		stop := func(context.Context) error { e.op.Webhook.Stop(); return nil }
		start := func(context.Context) error { return e.op.Webhook.Start(e.ctx) }
		return step{apply: stop, revert: start, hold: ev.WebhookDown.Duration.D()}
	case ev.ClusterConfigChanged != nil:
		return e.configChange(ev.ClusterConfigChanged.Spec)
	case ev.ClusterConfigDeleted != nil:
		st := step{apply: e.deleteClusterConfig}
		if d := ev.ClusterConfigDeleted.RecreateAfter.D(); d > 0 {
			st.revert, st.hold = e.createClusterConfig, d
		}
		return st
	}
	return step{apply: func(context.Context) error { return fmt.Errorf("unknown action") }}
}

// faultWindow installs registry faults f for hold, then the run's own. Its
// effect is the faults of the given kinds the registry injected meanwhile
// (the run's own latency aside, for the other kinds): none means no request
// met the window, and the event tested nothing.
func (e *operatorEnv) faultWindow(f fakeregistry.Faults, hold time.Duration, kinds ...fakeregistry.FaultKind) step {
	var before uint64
	apply := func(context.Context) error {
		before = faultCount(e.reg.Counters().Snapshot(), kinds)
		return e.reg.SetFaults(f)
	}
	restore := func(context.Context) error { return e.reg.SetFaults(e.baseFaults) }
	effect := func() (string, error) {
		n := faultCount(e.reg.Counters().Snapshot(), kinds) - before
		if n == 0 {
			return "", fmt.Errorf("the registry injected no fault during the window (no request reached it)")
		}
		return fmt.Sprintf("%d faults injected", n), nil
	}
	return step{apply: apply, revert: restore, hold: hold, effect: effect}
}

// deleteImages deletes the event's images from the registry for good. Its
// effect is the manifest requests for their tags that came afterwards: none
// means no inspection met a deleted image, and the event tested nothing.
func (e *operatorEnv) deleteImages(d scenario.ImagesDeletedEvent) step {
	doomed := scenario.ImagesWithPrefix(e.r.opts.Scenario.Catalog.Images(), d.Prefix)[:d.Count]
	asked := func() uint64 {
		snap := e.reg.Counters().Snapshot()
		var n uint64
		for _, im := range doomed {
			for _, tag := range im.Tags {
				c := snap.Manifests[fakeregistry.ManifestRef{Repository: im.Repository, Reference: tag}]
				n += c.Get + c.Head
			}
		}
		return n
	}
	var before uint64
	apply := func(context.Context) error {
		before = asked()
		var errs []error
		for _, im := range doomed {
			errs = append(errs, e.reg.DeleteImage(im.Repository, im.Digest))
		}
		return errors.Join(errs...)
	}
	effect := func() (string, error) {
		n := asked() - before
		if n == 0 {
			return "", fmt.Errorf("no manifest request named the %d deleted images afterwards", len(doomed))
		}
		return fmt.Sprintf("%d images deleted; %d manifest requests for them afterwards", len(doomed), n), nil
	}
	return step{apply: apply, effect: effect, hold: deletionObservation}
}

// deletionObservation is how long after deleting images the requests for them are counted.
const deletionObservation = 30 * time.Second

// faultCount is the number of faults of the kinds the registry injected so
// far.
func faultCount(s fakeregistry.Snapshot, kinds []fakeregistry.FaultKind) uint64 {
	var n uint64
	for _, k := range kinds {
		n += s.Faults[k]
	}
	return n
}
