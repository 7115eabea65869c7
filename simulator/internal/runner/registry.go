package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/simulator/internal/blackhole"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
	"github.com/archgate/archgate/simulator/internal/workload"
)

// registryUser is the registry account pull secrets carry.
const registryUser = "sim"

// fakeRegistry is the simulated cluster's registry: the fake registry with the scenario's
// faults and auth, and the attacker's host that never answers.
type fakeRegistry struct {
	reg *fakeregistry.Registry
	// hang is the attacker's host that never answers; nil without such attack pods.
	hang *blackhole.Host
	// base are the run's own faults, which a timeline window restores.
	base     fakeregistry.Faults
	password string
	auth     fakeregistry.AuthMode
}

// startFakeRegistry starts the fake registry with the scenario's faults and auth; done closes it.
func startFakeRegistry(ctx context.Context, s *scenario.Scenario, catalog *fakeregistry.Catalog, done *cleanups) (*fakeRegistry, error) {
	faults, err := baseFaults(s)
	if err != nil {
		return nil, err
	}
	f := &fakeRegistry{base: faults}
	if attacks(s, scenario.AttackImagesHang) {
		if f.hang, err = blackhole.Listen(); err != nil {
			return nil, fmt.Errorf("starting the attacker's host: %w", err)
		}
		done.add(func() { _ = f.hang.Close() })
	}
	opts := fakeregistry.Options{Catalog: catalog, TLS: *s.Registry.TLS, Faults: faults, Seed: s.Seed}
	if a := s.Registry.Auth; a != nil {
		f.password = randomHex(12)
		f.auth = fakeregistry.AuthMode(a.Mode)
		opts.Auth = fakeregistry.Auth{
			Mode:      f.auth,
			Users:     map[string]fakeregistry.User{registryUser: {Password: f.password, Repositories: []string{"**"}}},
			Anonymous: a.Anonymous,
		}
	}
	if f.reg, err = fakeregistry.Start(ctx, opts); err != nil {
		return nil, fmt.Errorf("starting the registry: %w", err)
	}
	done.add(func() { _ = f.reg.Close() })
	return f, nil
}

func (f *fakeRegistry) access() registryAccess {
	a := registryAccess{host: f.reg.Host(), hang: "hang.sim.invalid:5000", user: registryUser, password: f.password}
	if f.hang != nil {
		a.hang = f.hang.Addr()
	}
	if f.reg.TLS() {
		a.ca = f.reg.CACertPEM()
	}
	return a
}

// count resets the registry's counters; the returned count reads the stats of the requests
// since.
func (f *fakeRegistry) count(catalog *fakeregistry.Catalog) registryCount {
	f.reg.Counters().Reset()
	return func(_ context.Context, pods []workload.Pod) (*report.RegistryStats, error) {
		return registryStats(f.reg.Counters().Snapshot(), pods, catalog, f.auth), nil
	}
}

// step builds the registry's timeline events: outages, slowdowns, errors, deleted images.
func (f *fakeRegistry) step(ev scenario.Event, catalog *fakeregistry.Catalog) (step, bool) {
	switch {
	case ev.RegistryOutage != nil:
		faults := f.base
		faults.Outage = fakeregistry.Outage(ev.RegistryOutage.Mode)
		return f.faultWindow(faults, ev.RegistryOutage.Duration.D(), fakeregistry.FaultOutage), true
	case ev.RegistrySlowdown != nil:
		faults := f.base
		faults.Latency = map[fakeregistry.RequestKind]fakeregistry.Latency{fakeregistry.AllKinds: latency(ev.RegistrySlowdown.Latency)}
		return f.faultWindow(faults, ev.RegistrySlowdown.Duration.D(), fakeregistry.FaultLatency), true
	case ev.RegistryErrors != nil:
		faults := f.base
		applyRates(&faults, ev.RegistryErrors.Rates)
		return f.faultWindow(faults, ev.RegistryErrors.Duration.D(),
			fakeregistry.FaultServerError, fakeregistry.FaultTooManyRequests, fakeregistry.FaultHang), true
	case ev.ImagesDeleted != nil:
		return f.deleteImages(*ev.ImagesDeleted, catalog), true
	}
	return step{}, false
}

// faultWindow installs registry faults for hold, then the run's own. Its
// effect is the faults of the given kinds the registry injected meanwhile
// (the run's own latency aside, for the other kinds): none means no request
// met the window, and the event tested nothing.
func (f *fakeRegistry) faultWindow(faults fakeregistry.Faults, hold time.Duration, kinds ...fakeregistry.FaultKind) step {
	var before uint64
	apply := func(context.Context) error {
		before = faultCount(f.reg.Counters().Snapshot(), kinds)
		return f.reg.SetFaults(faults)
	}
	restore := func(context.Context) error { return f.reg.SetFaults(f.base) }
	effect := func() (string, error) {
		n := faultCount(f.reg.Counters().Snapshot(), kinds) - before
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
func (f *fakeRegistry) deleteImages(d scenario.ImagesDeletedEvent, catalog *fakeregistry.Catalog) step {
	doomed := scenario.ImagesWithPrefix(catalog.Images(), d.Prefix)[:d.Count]
	asked := func() uint64 {
		snap := f.reg.Counters().Snapshot()
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
			errs = append(errs, f.reg.DeleteImage(im.Repository, im.Digest))
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

// attacks reports whether the scenario's attacker has pods of the kind.
func attacks(s *scenario.Scenario, kind scenario.AttackImages) bool {
	return s.Attacker != nil && slices.ContainsFunc(s.Attacker.Attacks, func(a scenario.AttackSpec) bool { return a.Images == kind })
}

// baseFaults are the registry faults of the whole run: the scenario's, and
// the attacker's tarpit.
func baseFaults(s *scenario.Scenario) (fakeregistry.Faults, error) {
	r := s.Registry
	var f fakeregistry.Faults
	if attacks(s, scenario.AttackImagesTarpit) {
		t := s.Attacker.Tarpit
		f.Tarpit = &fakeregistry.Tarpit{Repositories: []string{workload.TarpitRepository},
			Size: int(t.Size.Value()), BytesPerSecond: int(t.BytesPerSecond.Value())}
	}
	if len(r.Latency) > 0 {
		f.Latency = map[fakeregistry.RequestKind]fakeregistry.Latency{}
		for k, l := range r.Latency {
			f.Latency[fakeregistry.RequestKind(k)] = latency(l)
		}
	}
	if e := r.Errors; e != nil {
		applyRates(&f, *e)
	}
	return f, f.Validate()
}

func applyRates(f *fakeregistry.Faults, e scenario.ErrorRatesSpec) {
	f.ServerErrorRate, f.TooManyRequestsRate, f.HangRate = e.ServerErrorRate, e.TooManyRequestsRate, e.HangRate
	f.RetryAfter = e.RetryAfter.D()
	f.Kinds = nil
	for _, k := range e.Kinds {
		f.Kinds = append(f.Kinds, fakeregistry.RequestKind(k))
	}
}

// latency converts a validated latency spec.
func latency(l scenario.LatencySpec) fakeregistry.Latency {
	switch {
	case l.Fixed != nil:
		return fakeregistry.FixedLatency(l.Fixed.D())
	case l.Min != nil:
		return fakeregistry.UniformLatency(l.Min.D(), l.Max.D())
	default:
		return fakeregistry.LogNormalLatency(l.P50.D(), l.P99.D())
	}
}
