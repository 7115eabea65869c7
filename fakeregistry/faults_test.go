package fakeregistry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/manifest"
)

func TestLatencySample(t *testing.T) {
	tests := map[string]struct {
		latency      Latency
		wantMin      time.Duration
		wantMax      time.Duration
		wantP50, p99 time.Duration // checked within 10% when set
	}{
		"fixed":     {latency: FixedLatency(7 * time.Millisecond), wantMin: 7 * time.Millisecond, wantMax: 7 * time.Millisecond},
		"uniform":   {latency: UniformLatency(time.Millisecond, 3*time.Millisecond), wantMin: time.Millisecond, wantMax: 3 * time.Millisecond, wantP50: 2 * time.Millisecond},
		"lognormal": {latency: LogNormalLatency(10*time.Millisecond, 200*time.Millisecond), wantMin: 0, wantMax: time.Hour, wantP50: 10 * time.Millisecond, p99: 200 * time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := tc.latency.validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 20000
			samples := make([]time.Duration, n)
			for i := range samples {
				samples[i] = tc.latency.Sample(rng)
				if samples[i] < tc.wantMin || samples[i] > tc.wantMax {
					t.Fatalf("sample %v outside [%v, %v]", samples[i], tc.wantMin, tc.wantMax)
				}
			}
			slices.Sort(samples)
			near := func(what string, got, want time.Duration) {
				if want == 0 {
					return
				}
				if got < want*9/10 || got > want*11/10 {
					t.Errorf("%s = %v, want about %v", what, got, want)
				}
			}
			near("p50", samples[n/2], tc.wantP50)
			near("p99", samples[n*99/100], tc.p99)
		})
	}
}

func TestFaultsValidate(t *testing.T) {
	tests := map[string]struct {
		faults  Faults
		wantErr string
	}{
		"zero":              {faults: Faults{}},
		"all set":           {faults: Faults{Outage: OutageReset, ServerErrorRate: 0.2, TooManyRequestsRate: 0.3, HangRate: 0.1, RetryAfter: time.Second, Kinds: []RequestKind{KindBlobGet}, Repositories: []string{"team/**"}, Latency: map[RequestKind]Latency{AllKinds: UniformLatency(0, time.Millisecond)}}},
		"unknown outage":    {faults: Faults{Outage: "flood"}, wantErr: `outage "flood"`},
		"rate above one":    {faults: Faults{HangRate: 1.5}, wantErr: "hang rate 1.5"},
		"rates sum":         {faults: Faults{HangRate: 0.6, ServerErrorRate: 0.6}, wantErr: "rates sum to 1.2"},
		"negative latency":  {faults: Faults{Latency: map[RequestKind]Latency{KindPing: FixedLatency(-1)}}, wantErr: "latency of ping"},
		"uniform reversed":  {faults: Faults{Latency: map[RequestKind]Latency{KindPing: UniformLatency(2, 1)}}, wantErr: "uniform latency"},
		"lognormal p99<p50": {faults: Faults{Latency: map[RequestKind]Latency{KindPing: LogNormalLatency(2, 1)}}, wantErr: "log-normal latency"},
		"no distribution":   {faults: Faults{Latency: map[RequestKind]Latency{KindPing: {Fixed: 1}}}, wantErr: "latency distribution"},
		"unknown kind":      {faults: Faults{Kinds: []RequestKind{"blob_put"}}, wantErr: `fault kind "blob_put"`},
		"bad pattern":       {faults: Faults{Repositories: []string{"["}}, wantErr: "pattern"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.faults.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestPodmanFaults runs containers/image against each fault and checks both the client's outcome and
// that the counters recorded what the client actually sent.
func TestPodmanFaults(t *testing.T) {
	const ref = "team/app/api:v1" // single OCI manifest: ping, manifest GET, config blob GET
	tests := map[string]struct {
		faults        Faults
		clientTimeout time.Duration
		wantErr       bool
		// wantResponses is awaited (bounded polling), since aborted requests are counted when the
		// handler returns, which may be after the client gave up.
		wantResponses map[KindStatus]uint64
		wantFaults    map[FaultKind]uint64
		wantDelay     map[RequestKind]time.Duration
	}{
		"fixed latency on manifests": {
			faults:        Faults{Latency: map[RequestKind]Latency{KindManifestGet: FixedLatency(3 * time.Millisecond)}},
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 200}: 1, {KindBlobGet, 200}: 1},
			wantFaults:    map[FaultKind]uint64{FaultLatency: 1},
			wantDelay:     map[RequestKind]time.Duration{KindManifestGet: 3 * time.Millisecond},
		},
		"uniform latency on every kind": {
			faults:        Faults{Latency: map[RequestKind]Latency{AllKinds: UniformLatency(time.Millisecond, time.Millisecond)}},
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 200}: 1, {KindBlobGet, 200}: 1},
			wantFaults:    map[FaultKind]uint64{FaultLatency: 3},
			wantDelay:     map[RequestKind]time.Duration{KindPing: time.Millisecond, KindManifestGet: time.Millisecond, KindBlobGet: time.Millisecond},
		},
		"latency longer than the client waits": {
			faults:        Faults{Latency: map[RequestKind]Latency{KindManifestGet: LogNormalLatency(time.Hour, 2*time.Hour)}},
			clientTimeout: 200 * time.Millisecond,
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 0}: 1},
			wantFaults:    map[FaultKind]uint64{FaultLatency: 1},
		},
		"server errors": {
			faults:        Faults{ServerErrorRate: 1, Kinds: []RequestKind{KindManifestGet}},
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 500}: 1},
			wantFaults:    map[FaultKind]uint64{FaultServerError: 1},
		},
		// containers/image retries 429 up to five attempts, honouring Retry-After (0 here).
		"too many requests": {
			faults:        Faults{TooManyRequestsRate: 1, Kinds: []RequestKind{KindManifestGet}},
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 429}: 5},
			wantFaults:    map[FaultKind]uint64{FaultTooManyRequests: 5},
		},
		"too many requests on blobs only": {
			faults:        Faults{TooManyRequestsRate: 1, Kinds: []RequestKind{KindBlobGet}},
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 200}: 1, {KindBlobGet, 429}: 5},
			wantFaults:    map[FaultKind]uint64{FaultTooManyRequests: 5},
		},
		"hang until the client gives up": {
			faults:        Faults{HangRate: 1, Kinds: []RequestKind{KindManifestGet}},
			clientTimeout: 200 * time.Millisecond,
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 0}: 1},
			wantFaults:    map[FaultKind]uint64{FaultHang: 1},
		},
		"outage unavailable": {
			faults:        Faults{Outage: OutageUnavailable},
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 503}: 1},
			wantFaults:    map[FaultKind]uint64{FaultOutage: 1},
		},
		"outage reset": {
			faults:        Faults{Outage: OutageReset},
			wantErr:       true,
			wantResponses: map[KindStatus]uint64{{KindPing, 0}: 1},
			wantFaults:    map[FaultKind]uint64{FaultOutage: 1},
		},
		"faults limited to other repositories": {
			faults:        Faults{ServerErrorRate: 1, Repositories: []string{"library/*"}},
			wantResponses: map[KindStatus]uint64{{KindPing, 200}: 1, {KindManifestGet, 200}: 1, {KindBlobGet, 200}: 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{Faults: tc.faults, Seed: 1})
			sys := podmanSystemContext(t, reg, "", "")
			ctx := t.Context()
			if tc.clientTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.clientTimeout)
				defer cancel()
			}
			_, err := inspectImage(ctx, sys, reg.Host()+"/"+ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("inspect error = %v, want error %v", err, tc.wantErr)
			}
			if tc.clientTimeout > 0 && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("inspect error = %v, want the client's deadline", err)
			}
			var snap Snapshot
			waitFor(t, "responses to be counted", func() bool {
				snap = reg.Counters().Snapshot()
				return cmp.Equal(tc.wantResponses, snap.Responses)
			})
			wantRequests := map[RequestKind]uint64{}
			for ks, n := range tc.wantResponses {
				wantRequests[ks.Kind] += n
			}
			if diff := cmp.Diff(wantRequests, snap.Requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orEmpty(tc.wantFaults), snap.Faults); diff != "" {
				t.Errorf("faults (-want +got):\n%s", diff)
			}
			if tc.wantDelay != nil {
				if diff := cmp.Diff(tc.wantDelay, snap.InjectedDelay); diff != "" {
					t.Errorf("injected delay (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// orEmpty turns a nil map into an empty one for comparison with snapshots.
func orEmpty[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

func TestRetryAfterHeader(t *testing.T) {
	reg := startRegistry(t, Options{Faults: Faults{TooManyRequestsRate: 1, RetryAfter: 1500 * time.Millisecond}})
	resp, err := httpClient(reg).Get(reg.URL() + "/v2/")
	if err != nil {
		t.Fatalf("GET /v2/: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("status %d Retry-After %q, want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestSetFaultsAtRuntime(t *testing.T) {
	reg := startRegistry(t, Options{Faults: Faults{Outage: OutageUnavailable}})
	sys := podmanSystemContext(t, reg, "", "")
	ref := reg.Reference("library/multi", "latest")
	if _, err := inspectImage(t.Context(), sys, ref); err == nil {
		t.Fatal("inspect during outage succeeded")
	}
	if err := reg.SetFaults(Faults{}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	if _, err := inspectImage(t.Context(), sys, ref); err != nil {
		t.Fatalf("inspect after the outage: %v", err)
	}
	if err := reg.SetFaults(Faults{HangRate: 3}); err == nil {
		t.Errorf("SetFaults accepted an invalid rate")
	}
	if diff := cmp.Diff(Faults{}, reg.Faults()); diff != "" {
		t.Errorf("an invalid SetFaults changed the faults (-want +got):\n%s", diff)
	}
}

// statusSequence sends n sequential pings and returns their statuses.
func statusSequence(t *testing.T, reg *Registry, n int) []int {
	t.Helper()
	client := httpClient(reg)
	var out []int
	for range n {
		resp, err := client.Get(reg.URL() + "/v2/")
		if err != nil {
			t.Fatalf("GET /v2/: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, resp.StatusCode)
	}
	return out
}

func TestFaultsDeterministicForSeed(t *testing.T) {
	faults := Faults{ServerErrorRate: 0.3, TooManyRequestsRate: 0.3}
	a := statusSequence(t, startRegistry(t, Options{Faults: faults, Seed: 7}), 40)
	b := statusSequence(t, startRegistry(t, Options{Faults: faults, Seed: 7}), 40)
	c := statusSequence(t, startRegistry(t, Options{Faults: faults, Seed: 8}), 40)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different faults (-a +b):\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Errorf("different seeds drew identical faults: %v", a)
	}
	for _, want := range []int{200, 429, 500} {
		if !slices.Contains(a, want) {
			t.Errorf("statuses %v never include %d", a, want)
		}
	}
}

// TestSetFaultsConcurrent changes faults while clients run; the race detector checks the locking.
func TestSetFaultsConcurrent(t *testing.T) {
	reg := startRegistry(t, Options{})
	client := httpClient(reg)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				resp, err := client.Get(reg.URL() + "/v2/library/multi/manifests/latest")
				if err != nil {
					t.Errorf("GET: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			f := Faults{ServerErrorRate: float64(i%2) * 0.5, Latency: map[RequestKind]Latency{AllKinds: FixedLatency(0)}}
			if err := reg.SetFaults(f); err != nil {
				t.Errorf("SetFaults: %v", err)
			}
			_ = reg.Faults()
		}
	})
	wg.Wait()
	if got := reg.Counters().Snapshot().Requests[KindManifestGet]; got != 100 {
		t.Errorf("manifest GETs = %d, want 100", got)
	}
}

// TestTarpit checks that a tarpit answers any tag of its repositories with a
// valid index of exactly its size, paced (a client that gives up first gets
// its deadline), and that other repositories are served as usual.
func TestTarpit(t *testing.T) {
	tarpit := &Tarpit{Repositories: []string{"attack/**"}, Size: 64 << 10, BytesPerSecond: 256 << 10}
	reg := startRegistry(t, Options{Faults: Faults{Tarpit: tarpit}, Seed: 1})
	sys := podmanSystemContext(t, reg, "", "")

	t.Run("whole index to a patient client", func(t *testing.T) {
		r, err := docker.ParseReference("//" + reg.Host() + "/attack/slow:any-tag")
		if err != nil {
			t.Fatal(err)
		}
		src, err := r.NewImageSource(t.Context(), sys)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		raw, mime, err := src.GetManifest(t.Context(), nil)
		if err != nil {
			t.Fatalf("GetManifest: %v", err)
		}
		if len(raw) != tarpit.Size || mime != string(types.OCIImageIndex) {
			t.Errorf("got %d bytes of %s, want %d of an OCI index", len(raw), mime, tarpit.Size)
		}
		list, err := manifest.ListFromBlob(raw, mime)
		if err != nil || len(list.Instances()) != 1 {
			t.Fatalf("index: %v, %d instances, want one", err, len(list.Instances()))
		}
	})
	t.Run("a client that gives up first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := inspectImage(ctx, sys, reg.Host()+"/attack/slow:other")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("inspect error = %v, want the client's deadline", err)
		}
	})
	t.Run("other repositories", func(t *testing.T) {
		if _, err := inspectImage(t.Context(), sys, reg.Host()+"/team/app/api:v1"); err != nil {
			t.Errorf("inspect of an ordinary image: %v", err)
		}
	})
	if n := reg.Counters().Snapshot().Faults[FaultTarpit]; n < 2 {
		t.Errorf("tarpit answers counted %d, want at least 2", n)
	}
}

func TestTarpitIndexSize(t *testing.T) {
	for _, size := range []int{MinTarpitSize, 1000, 4 << 20} {
		if got := len(tarpitIndex(size)); got != size {
			t.Errorf("tarpitIndex(%d) is %d bytes", size, got)
		}
	}
}
