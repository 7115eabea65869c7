package inspect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/archgate/archgate/operator/internal/credentials"
)

// fakeRegistry is an Inspector over a table of images: each image is readable by a set of
// identities and has fixed architectures. It counts inspections per canonical reference.
type fakeRegistry struct {
	mu       sync.Mutex
	images   map[string]fakeImage // canonical reference → image
	calls    map[string]int
	failNext map[string]error
	entered  chan string   // when non-nil, receives each reference as an inspection starts
	release  chan struct{} // when non-nil, inspections wait for it to close
}

type fakeImage struct {
	readers []credentials.Identity
	archs   []string
	digest  string
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{images: map[string]fakeImage{}, calls: map[string]int{}, failNext: map[string]error{}}
}

func (f *fakeRegistry) add(image string, img fakeImage) {
	ref, _, err := CanonicalReference(image)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[ref] = img
}

func (f *fakeRegistry) callsFor(image string) int {
	ref, _, _ := CanonicalReference(image)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[ref]
}

func (f *fakeRegistry) Architectures(ctx context.Context, image string, creds credentials.Candidates) (Result, error) {
	ref, _, err := CanonicalReference(image)
	if err != nil {
		return Result{}, err
	}
	if f.entered != nil {
		f.entered <- ref
	}
	if f.release != nil {
		<-f.release
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[ref]++
	if err := f.failNext[ref]; err != nil {
		delete(f.failNext, ref)
		return Result{}, err
	}
	img, ok := f.images[ref]
	if !ok {
		return Result{}, &Error{Image: image, Reason: ReasonNotFound, Err: errors.New("manifest unknown")}
	}
	for _, id := range creds.Identities() {
		for _, r := range img.readers {
			if r == id {
				return Result{Architectures: img.archs, Digest: img.digest, Identity: id}, nil
			}
		}
	}
	return Result{}, &Error{Image: image, Reason: ReasonAuth, Err: errors.New("unauthorized")}
}

func cred(user string) credentials.Credential {
	return credentials.Credential{Auth: credentials.AuthConfig{Username: user, Password: "pw-" + user}}
}

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestCachingInspectorIdentitySeparation(t *testing.T) {
	alice, bob := cred("alice"), cred("bob")
	tests := map[string]struct {
		primeWith  credentials.Candidates // first lookup, fills the cache
		lookupWith credentials.Candidates // second lookup
		readers    []credentials.Identity
		wantCalls  int // inspections after both lookups
		wantErr    Reason
	}{
		"same credential is served from the cache": {
			primeWith: credentials.Candidates{alice}, lookupWith: credentials.Candidates{alice},
			readers: []credentials.Identity{alice.Identity()}, wantCalls: 1,
		},
		"pod without credentials does not get a private result": {
			primeWith: credentials.Candidates{alice}, lookupWith: nil,
			readers: []credentials.Identity{alice.Identity()}, wantCalls: 2, wantErr: ReasonAuth,
		},
		"pod with other credentials does not get a private result": {
			primeWith: credentials.Candidates{alice}, lookupWith: credentials.Candidates{bob},
			readers: []credentials.Identity{alice.Identity()}, wantCalls: 2, wantErr: ReasonAuth,
		},
		"pod holding the accepted credential among others is served": {
			primeWith: credentials.Candidates{alice}, lookupWith: credentials.Candidates{bob, alice},
			readers: []credentials.Identity{alice.Identity()}, wantCalls: 1,
		},
		"entry filed under the credential that was accepted, not the first tried": {
			primeWith: credentials.Candidates{bob, alice}, lookupWith: credentials.Candidates{bob},
			readers: []credentials.Identity{alice.Identity()}, wantCalls: 2, wantErr: ReasonAuth,
		},
		"public result is not served to a pod with credentials": {
			primeWith: nil, lookupWith: credentials.Candidates{alice},
			readers: []credentials.Identity{credentials.Anonymous, alice.Identity()}, wantCalls: 2,
		},
		"public result is served to another anonymous pod": {
			primeWith: nil, lookupWith: nil,
			readers: []credentials.Identity{credentials.Anonymous}, wantCalls: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			const img = "registry.example/team/app:1"
			fake := newFakeRegistry()
			fake.add(img, fakeImage{readers: tc.readers, archs: []string{"arm64"}})
			c := NewCachingInspector(fake, CacheOptions{})
			if _, err := c.Architectures(context.Background(), img, tc.primeWith); err != nil {
				t.Fatalf("priming: Architectures() error = %v", err)
			}
			got, err := c.Architectures(context.Background(), img, tc.lookupWith)
			if tc.wantErr != "" {
				if ReasonOf(err) != tc.wantErr {
					t.Errorf("Architectures() = %v, %v; want reason %s", got, err, tc.wantErr)
				}
			} else if err != nil {
				t.Errorf("Architectures() error = %v", err)
			}
			if calls := fake.callsFor(img); calls != tc.wantCalls {
				t.Errorf("inspections = %d, want %d", calls, tc.wantCalls)
			}
		})
	}
}

func TestCachingInspectorCounts(t *testing.T) {
	fake := newFakeRegistry()
	fake.add("r.example/app:1", fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"amd64"}, digest: digestA})
	m := NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register() error = %v", err)
	}
	c := NewCachingInspector(fake, CacheOptions{Metrics: m})
	ctx := context.Background()

	for i := 0; i < 3; i++ {
		got, err := c.Architectures(ctx, "r.example/app:1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"amd64"}, got.Architectures); diff != "" {
			t.Fatalf("Architectures() mismatch (-want +got):\n%s", diff)
		}
		got.Architectures[0] = "mutated by a caller"
	}
	// The tag's result is also filed under its digest: a pinned lookup needs no inspection.
	if _, err := c.Architectures(ctx, "r.example/app@"+digestA, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Architectures(ctx, "r.example/app:1@"+digestA, nil); err != nil {
		t.Fatal(err)
	}

	if calls := fake.callsFor("r.example/app:1"); calls != 1 {
		t.Errorf("inspections = %d, want 1", calls)
	}
	want := map[string]float64{
		`hits{cache="tag"}`:       2,
		`hits{cache="digest"}`:    2,
		`misses{cache="tag"}`:     1,
		`misses{cache="digest"}`:  0,
		`entries{cache="tag"}`:    1,
		`entries{cache="digest"}`: 1,
	}
	got := map[string]float64{
		`hits{cache="tag"}`:       testutil.ToFloat64(m.hits.WithLabelValues(cacheTag)),
		`hits{cache="digest"}`:    testutil.ToFloat64(m.hits.WithLabelValues(cacheDigest)),
		`misses{cache="tag"}`:     testutil.ToFloat64(m.misses.WithLabelValues(cacheTag)),
		`misses{cache="digest"}`:  testutil.ToFloat64(m.misses.WithLabelValues(cacheDigest)),
		`entries{cache="tag"}`:    gaugeValue(t, reg, "archgate_inspect_cache_entries", cacheTag),
		`entries{cache="digest"}`: gaugeValue(t, reg, "archgate_inspect_cache_entries", cacheDigest),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics mismatch (-want +got):\n%s", diff)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

// gaugeValue reads one labelled gauge through the registry, as a scrape would.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, cache string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cache" && l.GetValue() == cache {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{cache=%q}", name, cache)
	return 0
}

func TestCachingInspectorErrorsAreNotCached(t *testing.T) {
	fake := newFakeRegistry()
	fake.add("r.example/app:1", fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"s390x"}})
	fake.failNext["r.example/app:1"] = &Error{Reason: ReasonNetwork, Err: errors.New("connection reset")}
	c := NewCachingInspector(fake, CacheOptions{})

	if _, err := c.Architectures(context.Background(), "r.example/app:1", nil); ReasonOf(err) != ReasonNetwork {
		t.Fatalf("first Architectures() error = %v, want a network error", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Architectures(context.Background(), "r.example/app:1", nil); err != nil {
			t.Fatalf("Architectures() error = %v", err)
		}
	}
	if calls := fake.callsFor("r.example/app:1"); calls != 2 {
		t.Errorf("inspections = %d, want 2 (the error was not cached, the success was)", calls)
	}
}

func TestCachingInspectorInvalidate(t *testing.T) {
	alice := cred("alice")
	fake := newFakeRegistry()
	for _, img := range []string{"r.example/a:1", "r.example/b:1"} {
		fake.add(img, fakeImage{readers: []credentials.Identity{credentials.Anonymous, alice.Identity()}, archs: []string{"arm64"}, digest: digestA})
	}
	m := NewMetrics()
	c := NewCachingInspector(fake, CacheOptions{Metrics: m})
	ctx := context.Background()
	lookup := func(img string, creds credentials.Candidates) {
		t.Helper()
		if _, err := c.Architectures(ctx, img, creds); err != nil {
			t.Fatal(err)
		}
	}
	lookup("r.example/a:1", credentials.Candidates{alice})
	lookup("r.example/b:1", nil)

	// a:1 is stored under the tag and under its digest, for alice.
	if n := c.Invalidate(alice.Identity()); n != 2 {
		t.Errorf("Invalidate() removed %d entries, want 2", n)
	}
	lookup("r.example/a:1", credentials.Candidates{alice})
	lookup("r.example/b:1", nil)
	if diff := cmp.Diff([]int{2, 1}, []int{fake.callsFor("r.example/a:1"), fake.callsFor("r.example/b:1")}); diff != "" {
		t.Errorf("inspections of a and b mismatch (-want +got):\n%s", diff)
	}

	if n := c.Purge(); n != 4 {
		t.Errorf("Purge() removed %d entries, want 4", n)
	}
	if tags, digests := c.Len(); tags+digests != 0 {
		t.Errorf("Len() after Purge() = %d, %d; want 0, 0", tags, digests)
	}
	wantEvicted := map[string]float64{"tag": 3, "digest": 3}
	gotEvicted := map[string]float64{
		"tag":    testutil.ToFloat64(m.evictions.WithLabelValues(cacheTag, evictInvalidated)),
		"digest": testutil.ToFloat64(m.evictions.WithLabelValues(cacheDigest, evictInvalidated)),
	}
	if diff := cmp.Diff(wantEvicted, gotEvicted); diff != "" {
		t.Errorf("invalidated evictions mismatch (-want +got):\n%s", diff)
	}
}

func TestCachingInspectorInFlightResultNotStoredAfterPurge(t *testing.T) {
	fake := newFakeRegistry()
	fake.add("r.example/app:1", fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"arm64"}})
	fake.entered = make(chan string, 1)
	fake.release = make(chan struct{})
	c := NewCachingInspector(fake, CacheOptions{})

	done := make(chan error, 1)
	go func() {
		_, err := c.Architectures(context.Background(), "r.example/app:1", nil)
		done <- err
	}()
	<-fake.entered
	c.Purge() // e.g. the global pull secret changed while the inspection was running
	close(fake.release)
	if err := <-done; err != nil {
		t.Fatalf("Architectures() error = %v", err)
	}
	if tags, digests := c.Len(); tags+digests != 0 {
		t.Errorf("Len() = %d, %d; want the in-flight result not stored", tags, digests)
	}
}

func TestCachingInspectorWaiterCancellation(t *testing.T) {
	fake := newFakeRegistry()
	fake.add("r.example/app:1", fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"arm64"}})
	fake.entered = make(chan string, 1)
	fake.release = make(chan struct{})
	m := NewMetrics()
	c := NewCachingInspector(fake, CacheOptions{Metrics: m})

	first, cancelFirst := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := c.Architectures(first, "r.example/app:1", nil)
		firstDone <- err
	}()
	<-fake.entered // the first caller's inspection is running
	secondDone := make(chan error, 1)
	go func() {
		_, err := c.Architectures(context.Background(), "r.example/app:1", nil)
		secondDone <- err
	}()
	waitFor(t, "the second caller to wait on the first's inspection", func() bool { return c.waiting.Load() == 2 })

	cancelFirst()
	if err := <-firstDone; ReasonOf(err) != ReasonCanceled {
		t.Errorf("canceled caller: error = %v, want reason %s", err, ReasonCanceled)
	}
	close(fake.release)
	if err := <-secondDone; err != nil {
		t.Errorf("waiting caller: error = %v, want the shared result", err)
	}
	if calls := fake.callsFor("r.example/app:1"); calls != 1 {
		t.Errorf("inspections = %d, want 1", calls)
	}
	if _, err := c.Architectures(context.Background(), "r.example/app:1", nil); err != nil {
		t.Errorf("after: error = %v", err)
	}
	if hits := testutil.ToFloat64(m.hits.WithLabelValues(cacheTag)); hits != 1 {
		t.Errorf("hits = %v, want 1 (the result of the canceled caller's inspection was cached)", hits)
	}
}

func TestCachingInspectorCapacityAndExpiry(t *testing.T) {
	fake := newFakeRegistry()
	for i := 0; i < 3; i++ {
		fake.add(fmt.Sprintf("r.example/app:%d", i), fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"amd64"}})
	}
	m := NewMetrics()
	c := NewCachingInspector(fake, CacheOptions{Size: 2, Metrics: m})
	for i := 0; i < 3; i++ {
		if _, err := c.Architectures(context.Background(), fmt.Sprintf("r.example/app:%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if tags, _ := c.Len(); tags != 2 {
		t.Errorf("tag entries = %d, want 2", tags)
	}
	if got := testutil.ToFloat64(m.evictions.WithLabelValues(cacheTag, evictCapacity)); got != 1 {
		t.Errorf("capacity evictions = %v, want 1", got)
	}

	short := NewCachingInspector(fake, CacheOptions{TTL: 50 * time.Millisecond, Metrics: NewMetrics()})
	if _, err := short.Architectures(context.Background(), "r.example/app:0", nil); err != nil {
		t.Fatal(err)
	}
	before := fake.callsFor("r.example/app:0")
	key := cacheKey{ref: "r.example/app:0", id: credentials.Anonymous}
	waitFor(t, "the entry to expire", func() bool { _, ok := short.tags.Peek(key); return !ok })
	if _, err := short.Architectures(context.Background(), "r.example/app:0", nil); err != nil {
		t.Fatal(err)
	}
	if after := fake.callsFor("r.example/app:0"); after != before+1 {
		t.Errorf("inspections after the TTL = %d, want %d", after, before+1)
	}
}

func TestCachingInspectorDigestEntriesDoNotExpire(t *testing.T) {
	fake := newFakeRegistry()
	fake.add("r.example/app:1", fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"arm64"}, digest: digestA})
	fake.add("r.example/app@"+digestA, fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"arm64"}})
	c := NewCachingInspector(fake, CacheOptions{})
	for _, img := range []string{"r.example/app:1", "r.example/app@" + digestA, "r.example/other@" + digestA} {
		_, _ = c.Architectures(context.Background(), img, nil)
	}
	tagEntry, ok := c.tags.Peek(cacheKey{ref: "r.example/app:1", id: credentials.Anonymous})
	if !ok || tagEntry.expires.IsZero() {
		t.Errorf("tag entry = %v, %v; want one with an expiry", tagEntry, ok)
	}
	digestEntry, ok := c.digests.Peek(cacheKey{ref: "r.example/app@" + digestA, id: credentials.Anonymous})
	if !ok || !digestEntry.expires.IsZero() {
		t.Errorf("digest entry = %v, %v; want one without expiry", digestEntry, ok)
	}
	if calls := fake.callsFor("r.example/app@" + digestA); calls != 0 {
		t.Errorf("inspections by digest = %d, want 0 (filed when the tag was read)", calls)
	}
}

func TestCachingInspectorInvalidReference(t *testing.T) {
	fake := newFakeRegistry()
	c := NewCachingInspector(fake, CacheOptions{})
	_, err := c.Architectures(context.Background(), "r.example/UPPER:1", nil)
	if ReasonOf(err) != ReasonInvalidReference {
		t.Errorf("Architectures() error = %v, want reason %s", err, ReasonInvalidReference)
	}
}

// TestCachingInspectorDeduplicatesConcurrentLookups sends N concurrent lookups of one image
// through the cache to a real (in-process) registry whose manifest answers are held back
// until every lookup is waiting: the registry must see exactly one inspection.
func TestCachingInspectorDeduplicatesConcurrentLookups(t *testing.T) {
	const n = 16
	reg := newTestRegistry(t, withGate())
	reg.pushIndex("team/app:1", testIndex(t, formatOCI,
		indexEntry{os: "linux", arch: "amd64"},
		indexEntry{os: "linux", arch: "arm64"},
	))
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	m := NewMetrics()
	opts := cfg.options()
	opts.Metrics = m
	c := NewCachingInspector(mustInspector(t, opts), CacheOptions{Metrics: m})

	var wg sync.WaitGroup
	var failures atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.Architectures(context.Background(), reg.host+"/team/app:1", nil)
			if err != nil || !cmp.Equal([]string{"amd64", "arm64"}, got.Architectures) {
				t.Errorf("Architectures() = %v, %v", got, err)
				failures.Add(1)
			}
		}()
	}
	waitFor(t, "all lookups to wait on the registry", func() bool {
		return c.waiting.Load() == n && reg.manifestGets.Load() == 1
	})
	close(reg.gate)
	wg.Wait()

	if got := reg.manifestGets.Load(); got != 1 {
		t.Errorf("registry manifest requests = %d, want 1", got)
	}
	inspections := histogramCount(t, m.duration.WithLabelValues("success"))
	if inspections != 1 {
		t.Errorf("registry inspections = %d, want 1", inspections)
	}
	if shared := testutil.ToFloat64(m.shared); shared < 1 || shared > n-1 {
		t.Errorf("dedup waits = %v, want between 1 and %d", shared, n-1)
	}
	if _, err := c.Architectures(context.Background(), reg.host+"/team/app:1", nil); err != nil {
		t.Fatal(err)
	}
	if got := reg.manifestGets.Load(); got != 1 {
		t.Errorf("registry manifest requests after a warm lookup = %d, want 1", got)
	}
}

func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	h, ok := o.(prometheus.Histogram)
	if !ok {
		t.Fatalf("%T is not a histogram", o)
	}
	var pb dto.Metric
	if err := h.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount()
}

// TestCachingInspectorRegistryAuthSeparation checks, against a registry that needs basic
// auth, that a cached private result is served to the credential that read it and to
// nobody else.
func TestCachingInspectorRegistryAuthSeparation(t *testing.T) {
	reg := newTestRegistry(t, withBasicAuth("alice", "right"))
	reg.pushImage("private/app:1", imageOf("linux", "s390x").inFormat(formatOCI).build(t))
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	c := NewCachingInspector(mustInspector(t, cfg.options()), CacheOptions{})
	img := reg.host + "/private/app:1"
	alice := cred("alice")
	alice.Auth.Password = "right"
	mallory := cred("mallory")

	steps := []struct {
		name          string
		creds         credentials.Candidates
		wantErr       Reason
		wantManifests int64 // registry manifest requests so far
	}{
		{name: "alice reads it", creds: credentials.Candidates{alice}, wantManifests: 1},
		{name: "alice again: cached", creds: credentials.Candidates{alice}, wantManifests: 1},
		{name: "anonymous pod asks the registry", creds: nil, wantErr: ReasonAuth, wantManifests: 2},
		{name: "other credential asks the registry", creds: credentials.Candidates{mallory}, wantErr: ReasonAuth, wantManifests: 3},
		{name: "anonymous pod again: errors are not cached", creds: nil, wantErr: ReasonAuth, wantManifests: 4},
	}
	for _, s := range steps {
		got, err := c.Architectures(context.Background(), img, s.creds)
		if s.wantErr != "" {
			if ReasonOf(err) != s.wantErr {
				t.Errorf("%s: Architectures() = %v, %v; want reason %s", s.name, got, err, s.wantErr)
			}
		} else if err != nil {
			t.Errorf("%s: Architectures() error = %v", s.name, err)
		}
		if m := reg.manifestGets.Load(); m != s.wantManifests {
			t.Errorf("%s: registry manifest requests = %d, want %d", s.name, m, s.wantManifests)
		}
	}
}

func TestCachingInspectorRegistryErrorsNotCached(t *testing.T) {
	reg := newTestRegistry(t)
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	c := NewCachingInspector(mustInspector(t, cfg.options()), CacheOptions{})
	img := reg.host + "/late/app:1"
	if _, err := c.Architectures(context.Background(), img, nil); ReasonOf(err) != ReasonNotFound {
		t.Fatalf("before the push: error = %v, want reason %s", err, ReasonNotFound)
	}
	reg.pushImage("late/app:1", imageOf("linux", "arm64").build(t))
	got, err := c.Architectures(context.Background(), img, nil)
	if err != nil {
		t.Fatalf("after the push: error = %v", err)
	}
	if diff := cmp.Diff([]string{"arm64"}, got.Architectures); diff != "" {
		t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
	}
}

// BenchmarkCachedArchitectures measures warm-cache lookups from many goroutines, as the
// placement controller's workers make them.
func BenchmarkCachedArchitectures(b *testing.B) {
	fake := newFakeRegistry()
	pull, err := credentials.ParseDockerConfigJSON(credentials.Source{Namespace: "ns", Name: "pull"},
		[]byte(`{"auths":{"registry.example:5000/team":{"username":"alice","password":"pw"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	// Candidates as the controller gets them from the keyring.
	creds, err := credentials.NewKeyring(nil, pull).Lookup("registry.example:5000/team/app:v1")
	if err != nil || len(creds) != 1 {
		b.Fatalf("Lookup() = %v, %v", creds, err)
	}
	images := make([]string, 64)
	for i := range images {
		images[i] = fmt.Sprintf("registry.example:5000/team/app-%d:v1", i)
		fake.add(images[i], fakeImage{readers: creds.Identities(), archs: []string{"amd64", "arm64"}})
	}
	c := NewCachingInspector(fake, CacheOptions{})
	for _, img := range images {
		if _, err := c.Architectures(context.Background(), img, creds); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1))
		for pb.Next() {
			if _, err := c.Architectures(context.Background(), images[i%len(images)], creds); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

func TestKnownImagesHoldOnlyEntriesOfTheGivenIdentities(t *testing.T) {
	alice := cred("alice")
	fake := newFakeRegistry()
	fake.add("registry.example/public:1", fakeImage{readers: []credentials.Identity{credentials.Anonymous}, archs: []string{"arm64"}, digest: digestA})
	fake.add("registry.example/private:1", fakeImage{readers: []credentials.Identity{alice.Identity()}, archs: []string{"amd64"}})
	c := NewCachingInspector(fake, CacheOptions{TTL: time.Hour})
	ctx := context.Background()
	if _, err := c.Architectures(ctx, "registry.example/public:1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Architectures(ctx, "registry.example/private:1", credentials.Candidates{alice}); err != nil {
		t.Fatal(err)
	}
	var refs []string
	anonymous := func(string) []credentials.Identity { return []credentials.Identity{credentials.Anonymous} }
	for _, p := range c.KnownImages(anonymous) {
		refs = append(refs, p.Ref)
		if p.Ref == "registry.example/public:1" && (p.Expires == nil || !p.Expires.After(time.Now())) {
			t.Errorf("tag entry expires at %v, want a time in the future", p.Expires)
		}
	}
	want := []string{"registry.example/public@" + digestA, "registry.example/public:1"}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("known images (-want +got):\n%s", diff)
	}
	withAlice := c.KnownImages(func(ref string) []credentials.Identity {
		if ref == "registry.example/private:1" {
			return []credentials.Identity{alice.Identity()}
		}
		return []credentials.Identity{credentials.Anonymous}
	})
	if len(withAlice) != 3 {
		t.Errorf("known images with alice's credential for the private image = %v, want 3 entries", withAlice)
	}
	c.Purge()
	if got := c.KnownImages(anonymous); len(got) != 0 {
		t.Errorf("known images after Purge = %v, want none", got)
	}
}

// TestFailuresAreRememberedPerReferenceAndCredentials: with FailureTTL a failed inspection is
// answered again to callers with the same credentials without asking the registry — a broken
// credential costs a request per image, not per pod and retry — while other credentials are
// still tried, and an invalidation forgets it.
func TestFailuresAreRememberedPerReferenceAndCredentials(t *testing.T) {
	alice := cred("alice")
	const img = "registry.example/private/app:1"
	tests := map[string]struct {
		ttl       time.Duration
		second    credentials.Candidates
		purge     bool
		wantCalls int
		wantOK    bool // the second lookup succeeds
	}{
		"same credentials: the failure is answered": {ttl: time.Minute, wantCalls: 1},
		"other credentials are tried":               {ttl: time.Minute, second: credentials.Candidates{alice}, wantCalls: 2, wantOK: true},
		"an invalidation forgets the failure":       {ttl: time.Minute, purge: true, wantCalls: 2},
		"without FailureTTL every lookup asks":      {ttl: 0, wantCalls: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fake := newFakeRegistry()
			fake.add(img, fakeImage{readers: []credentials.Identity{alice.Identity()}, archs: []string{"arm64"}})
			m := NewMetrics()
			c := NewCachingInspector(fake, CacheOptions{FailureTTL: tc.ttl, Metrics: m})
			ctx := context.Background()
			if _, err := c.Architectures(ctx, img, nil); err == nil {
				t.Fatal("anonymous inspection of a private image succeeded")
			}
			if tc.purge {
				c.Invalidate(alice.Identity())
			}
			_, err := c.Architectures(ctx, img, tc.second)
			if (err == nil) != tc.wantOK {
				t.Fatalf("second lookup error = %v, want success %t", err, tc.wantOK)
			}
			var ie *Error
			if err != nil && (!errors.As(err, &ie) || ie.Reason != ReasonAuth) {
				t.Errorf("remembered error = %v, want the registry's auth failure", err)
			}
			if got := fake.callsFor(img); got != tc.wantCalls {
				t.Errorf("registry inspections = %d, want %d", got, tc.wantCalls)
			}
			wantHits := float64(2 - tc.wantCalls)
			if got := testutil.ToFloat64(m.failHits); got != wantHits {
				t.Errorf("failure hits = %v, want %v", got, wantHits)
			}
		})
	}
}
