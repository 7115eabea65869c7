package fakeregistry

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Outage selects how the registry fails every request during a full outage.
type Outage string

const (
	// OutageNone serves normally.
	OutageNone Outage = ""
	// OutageUnavailable answers every request 503 UNAVAILABLE.
	OutageUnavailable Outage = "unavailable"
	// OutageReset aborts every request without a response (the connection or HTTP/2 stream is reset).
	OutageReset Outage = "reset"
)

// Distribution is the shape of an injected latency.
type Distribution string

const (
	// DistributionFixed always waits Latency.Fixed.
	DistributionFixed Distribution = "fixed"
	// DistributionUniform waits uniformly between Latency.Min and Latency.Max.
	DistributionUniform Distribution = "uniform"
	// DistributionLogNormal waits a log-normal time with median Latency.P50 and 99th percentile Latency.P99.
	DistributionLogNormal Distribution = "lognormal"
)

// z99 is the standard normal quantile of 0.99, which links the log-normal sigma to p50 and p99.
const z99 = 2.3263478740408408

// Latency is an injected delay distribution; build it with FixedLatency, UniformLatency or LogNormalLatency.
type Latency struct {
	// Distribution selects which of the other fields apply.
	Distribution Distribution
	// Fixed is the delay of DistributionFixed.
	Fixed time.Duration
	// Min and Max bound DistributionUniform.
	Min, Max time.Duration
	// P50 and P99 are the median and 99th percentile of DistributionLogNormal.
	P50, P99 time.Duration
}

// FixedLatency returns a latency that always waits d.
func FixedLatency(d time.Duration) Latency {
	return Latency{Distribution: DistributionFixed, Fixed: d}
}

// UniformLatency returns a latency drawn uniformly from [lo, hi].
func UniformLatency(lo, hi time.Duration) Latency {
	return Latency{Distribution: DistributionUniform, Min: lo, Max: hi}
}

// LogNormalLatency returns a log-normal latency with the given median and 99th percentile.
func LogNormalLatency(p50, p99 time.Duration) Latency {
	return Latency{Distribution: DistributionLogNormal, P50: p50, P99: p99}
}

// validate checks the fields the distribution uses.
func (l Latency) validate() error {
	switch l.Distribution {
	case DistributionFixed:
		if l.Fixed < 0 {
			return fmt.Errorf("fixed latency %v is negative", l.Fixed)
		}
	case DistributionUniform:
		if l.Min < 0 || l.Max < l.Min {
			return fmt.Errorf("uniform latency [%v, %v]: want 0 <= min <= max", l.Min, l.Max)
		}
	case DistributionLogNormal:
		if l.P50 <= 0 || l.P99 < l.P50 {
			return fmt.Errorf("log-normal latency p50 %v p99 %v: want 0 < p50 <= p99", l.P50, l.P99)
		}
	default:
		return fmt.Errorf("latency distribution %q: want fixed, uniform or lognormal", l.Distribution)
	}
	return nil
}

// Sample draws one delay from rng: the delay the registry adds to a request of a kind with
// this latency (a harness can model what the registry costs without asking it).
func (l Latency) Sample(rng *rand.Rand) time.Duration {
	switch l.Distribution {
	case DistributionUniform:
		return l.Min + time.Duration(rng.Int64N(int64(l.Max-l.Min)+1))
	case DistributionLogNormal:
		mu := math.Log(float64(l.P50))
		sigma := (math.Log(float64(l.P99)) - mu) / z99
		return time.Duration(math.Exp(mu + sigma*rng.NormFloat64()))
	default:
		return l.Fixed
	}
}

// Faults is the set of injected failures. The zero value injects nothing.
type Faults struct {
	// Outage fails every request of every kind when set.
	Outage Outage
	// Latency delays requests of a kind before they are served; the AllKinds key applies to kinds
	// without their own entry. A client that gives up during the delay ends the request.
	Latency map[RequestKind]Latency
	// ServerErrorRate is the probability (0..1) of answering 500 INTERNAL_ERROR.
	ServerErrorRate float64
	// TooManyRequestsRate is the probability (0..1) of answering 429 TOOMANYREQUESTS with Retry-After.
	TooManyRequestsRate float64
	// RetryAfter is sent with 429 answers, in whole seconds rounded up (zero sends "Retry-After: 0").
	RetryAfter time.Duration
	// HangRate is the probability (0..1) of never answering: the request is held until the client
	// gives up (its context is done) or the registry closes, then aborted.
	HangRate float64
	// Kinds limits the three rates above to these request kinds; empty means every kind.
	Kinds []RequestKind
	// Repositories limits the three rates above to repositories matching these patterns (see Auth);
	// empty means every request, including those without a repository (ping, token).
	Repositories []string
	// Tarpit, when set, answers the manifest requests of its repositories with a large index sent
	// slowly, after the latency and rates above.
	Tarpit *Tarpit
}

// installedFaults are the faults in force, with what is built from them once: the tarpit's
// index. One pointer swaps both, so a request never sees one without the other.
type installedFaults struct {
	Faults
	tarpitBody []byte
}

// Validate checks rates, latencies and patterns.
func (f Faults) Validate() error {
	var errs []error
	switch f.Outage {
	case OutageNone, OutageUnavailable, OutageReset:
	default:
		errs = append(errs, fmt.Errorf("outage %q: want empty, unavailable or reset", f.Outage))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Latency)) {
		if k != AllKinds && !slices.Contains(RequestKinds(), k) {
			errs = append(errs, fmt.Errorf("latency kind %q: unknown request kind", k))
		}
		if err := f.Latency[k].validate(); err != nil {
			errs = append(errs, fmt.Errorf("latency of %s: %w", k, err))
		}
	}
	for name, rate := range map[string]float64{
		"server error rate": f.ServerErrorRate, "too-many-requests rate": f.TooManyRequestsRate, "hang rate": f.HangRate,
	} {
		if rate < 0 || rate > 1 || math.IsNaN(rate) {
			errs = append(errs, fmt.Errorf("%s %v: want within [0, 1]", name, rate))
		}
	}
	if sum := f.ServerErrorRate + f.TooManyRequestsRate + f.HangRate; sum > 1 {
		errs = append(errs, fmt.Errorf("rates sum to %v: want at most 1", sum))
	}
	if f.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("retry-after %v is negative", f.RetryAfter))
	}
	for _, k := range f.Kinds {
		if !slices.Contains(RequestKinds(), k) {
			errs = append(errs, fmt.Errorf("fault kind %q: unknown request kind", k))
		}
	}
	for _, p := range f.Repositories {
		if !validPattern(p) {
			errs = append(errs, fmt.Errorf("fault repository pattern %q is malformed", p))
		}
	}
	if f.Tarpit != nil {
		errs = append(errs, f.Tarpit.validate()...)
	}
	slices.SortFunc(errs, func(a, b error) int { return compareStrings(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// compareStrings orders strings for stable error output.
func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// clone deep-copies f so later changes by the caller do not race with the server.
func (f Faults) clone() Faults {
	f.Latency = maps.Clone(f.Latency)
	f.Kinds = slices.Clone(f.Kinds)
	f.Repositories = slices.Clone(f.Repositories)
	if f.Tarpit != nil {
		t := *f.Tarpit
		t.Repositories = slices.Clone(t.Repositories)
		f.Tarpit = &t
	}
	return f
}

// LatencyFor returns the latency requests of kind get, if any.
func (f *Faults) LatencyFor(kind RequestKind) (Latency, bool) {
	if l, ok := f.Latency[kind]; ok {
		return l, true
	}
	l, ok := f.Latency[AllKinds]
	return l, ok
}

// ratesApply reports whether the error and hang rates apply to a request.
func (f *Faults) ratesApply(info requestInfo) bool {
	if f.ServerErrorRate+f.TooManyRequestsRate+f.HangRate <= 0 {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, info.kind) {
		return false
	}
	if len(f.Repositories) == 0 {
		return true
	}
	for _, p := range f.Repositories {
		if matchRepository(p, info.repository) && info.repository != "" {
			return true
		}
	}
	return false
}

// FaultKind names an injected fault in counters.
type FaultKind string

const (
	// FaultLatency is an injected delay.
	FaultLatency FaultKind = "latency"
	// FaultServerError is an injected 500.
	FaultServerError FaultKind = "server_error"
	// FaultTooManyRequests is an injected 429.
	FaultTooManyRequests FaultKind = "too_many_requests"
	// FaultHang is a request held until the client gave up.
	FaultHang FaultKind = "hang"
	// FaultOutage is a request failed by a full outage.
	FaultOutage FaultKind = "outage"
	// FaultTarpit is a manifest request answered by the tarpit.
	FaultTarpit FaultKind = "tarpit"
)

// faultInjector applies the current Faults to requests. Random draws come from one seeded generator
// behind a mutex, so a given sequence of requests sees the same faults for the same seed.
type faultInjector struct {
	current  atomic.Pointer[installedFaults]
	mu       sync.Mutex
	rng      *rand.Rand
	counters *Counters
	// done is closed when the registry closes, releasing held requests.
	done <-chan struct{}
}

// newFaultInjector validates initial and seeds the generator.
func newFaultInjector(initial Faults, seed uint64, counters *Counters, done <-chan struct{}) (*faultInjector, error) {
	fi := &faultInjector{rng: rand.New(rand.NewPCG(seed, 0xbb67ae8584caa73b)), counters: counters, done: done}
	if err := fi.set(initial); err != nil {
		return nil, err
	}
	return fi, nil
}

// set validates and installs f.
func (fi *faultInjector) set(f Faults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("invalid faults: %w", err)
	}
	c := installedFaults{Faults: f.clone()}
	if c.Tarpit != nil {
		c.tarpitBody = tarpitIndex(c.Tarpit.Size)
	}
	fi.current.Store(&c)
	return nil
}

// get returns a copy of the installed faults.
func (fi *faultInjector) get() Faults {
	return fi.current.Load().Faults.clone()
}

// decision is what the injector does to one request.
type decision struct {
	delay time.Duration
	fault FaultKind
}

// decide draws the faults for one request.
func (fi *faultInjector) decide(info requestInfo) (decision, *installedFaults) {
	f := fi.current.Load()
	if f.Outage != OutageNone {
		return decision{fault: FaultOutage}, f
	}
	lat, hasLatency := f.LatencyFor(info.kind)
	rates := f.ratesApply(info)
	if !hasLatency && !rates {
		return decision{}, f
	}
	var d decision
	fi.mu.Lock()
	if hasLatency {
		d.delay = lat.Sample(fi.rng)
	}
	u := 1.0
	if rates {
		u = fi.rng.Float64()
	}
	fi.mu.Unlock()
	switch {
	case u < f.HangRate:
		d.fault = FaultHang
	case u < f.HangRate+f.TooManyRequestsRate:
		d.fault = FaultTooManyRequests
	case u < f.HangRate+f.TooManyRequestsRate+f.ServerErrorRate:
		d.fault = FaultServerError
	}
	return d, f
}

// wrap returns next behind the injected faults.
func (fi *faultInjector) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		d, f := fi.decide(info)
		if d.fault == FaultOutage {
			fi.counters.recordFault(info.kind, FaultOutage, 0)
			if f.Outage == OutageReset {
				panic(http.ErrAbortHandler)
			}
			writeRegistryError(w, http.StatusServiceUnavailable, codeUnavailable, "registry outage")
			return
		}
		if d.delay > 0 {
			fi.counters.recordFault(info.kind, FaultLatency, d.delay)
			if !fi.wait(r, d.delay) {
				panic(http.ErrAbortHandler)
			}
		}
		switch d.fault {
		case FaultHang:
			fi.counters.recordFault(info.kind, FaultHang, 0)
			select {
			case <-r.Context().Done():
			case <-fi.done:
			}
			panic(http.ErrAbortHandler)
		case FaultTooManyRequests:
			fi.counters.recordFault(info.kind, FaultTooManyRequests, 0)
			secs := int64((f.RetryAfter + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			writeRegistryError(w, http.StatusTooManyRequests, codeTooManyRequests, "injected rate limit")
			return
		case FaultServerError:
			fi.counters.recordFault(info.kind, FaultServerError, 0)
			writeRegistryError(w, http.StatusInternalServerError, codeInternal, "injected server error")
			return
		}
		if f.Tarpit.applies(info) {
			fi.counters.recordFault(info.kind, FaultTarpit, 0)
			f.Tarpit.serve(r.Context(), fi.done, w, r, f.tarpitBody)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wait sleeps d unless the client gives up or the registry closes first; it reports whether d passed.
func (fi *faultInjector) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-fi.done:
		return false
	}
}
