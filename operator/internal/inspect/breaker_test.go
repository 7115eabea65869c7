/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package inspect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/archgate/archgate/operator/internal/credentials"
)

func TestHostBreakers(t *testing.T) {
	timeout := &Error{Reason: ReasonTimeout, Err: context.DeadlineExceeded}
	refused := &Error{Reason: ReasonNetwork, Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	notFound := &Error{Reason: ReasonNotFound, Err: errors.New("manifest unknown")}
	tests := map[string]struct {
		failures   int
		errs       []error // the host's answers, in order; the last one repeats
		callerDone bool    // the caller's context ends before each answer
		calls      int
		wantAsked  int // how many calls reached the host
		wantReason Reason
	}{
		"timeouts open the circuit":                {failures: 3, errs: []error{timeout}, calls: 6, wantAsked: 3, wantReason: ReasonCircuitOpen},
		"fast network errors keep it closed":       {failures: 3, errs: []error{refused}, calls: 6, wantAsked: 6, wantReason: ReasonNetwork},
		"answers keep it closed":                   {failures: 3, errs: []error{notFound}, calls: 6, wantAsked: 6, wantReason: ReasonNotFound},
		"a success in between resets the count":    {failures: 3, errs: []error{timeout, timeout, nil, timeout, timeout, timeout}, calls: 7, wantAsked: 6, wantReason: ReasonCircuitOpen},
		"the caller's own deadline does not count": {failures: 3, errs: []error{timeout}, callerDone: true, calls: 6, wantAsked: 6, wantReason: ReasonTimeout},
		"negative failures disable it":             {failures: -1, errs: []error{timeout}, calls: 6, wantAsked: 6, wantReason: ReasonTimeout},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := NewMetrics()
			b := newHostBreakers(tc.failures, time.Hour, m)
			asked := 0
			var err error
			for range tc.calls {
				ctx, cancel := context.WithCancel(t.Context())
				_, err = b.do(ctx, "r.example", "r.example/app:1", func() (Result, error) {
					e := tc.errs[min(asked, len(tc.errs)-1)]
					asked++
					if tc.callerDone {
						cancel()
					}
					if e == nil {
						return Result{Architectures: []string{"amd64"}}, nil
					}
					return Result{}, e
				})
				cancel()
			}
			if asked != tc.wantAsked {
				t.Errorf("the host was asked %d times, want %d", asked, tc.wantAsked)
			}
			if got := ReasonOf(err); got != tc.wantReason {
				t.Errorf("last error %v: reason %q, want %q", err, got, tc.wantReason)
			}
			wantRejected := float64(tc.calls - tc.wantAsked)
			if got := testutil.ToFloat64(m.circuitRejections); got != wantRejected {
				t.Errorf("%s = %v, want %v", MetricCircuitRejections, got, wantRejected)
			}
		})
	}
}

// An open circuit lets one inspection through once its time is up; a success closes it. Other
// hosts are not affected meanwhile.
func TestHostBreakersProbeAndClose(t *testing.T) {
	m := NewMetrics()
	b := newHostBreakers(2, 50*time.Millisecond, m)
	fail := func() (Result, error) { return Result{}, &Error{Reason: ReasonTimeout, Err: context.DeadlineExceeded} }
	ok := func() (Result, error) { return Result{Architectures: []string{"arm64"}}, nil }
	for range 2 {
		_, _ = b.do(t.Context(), "down.example", "down.example/a:1", fail)
	}
	if _, err := b.do(t.Context(), "down.example", "down.example/a:1", ok); ReasonOf(err) != ReasonCircuitOpen {
		t.Fatalf("right after opening: %v, want the circuit open", err)
	}
	if _, err := b.do(t.Context(), "up.example", "up.example/a:1", ok); err != nil {
		t.Fatalf("another host: %v", err)
	}
	if got := testutil.ToFloat64(m.circuitOpenings); got != 1 {
		t.Errorf("%s = %v, want 1", MetricCircuitOpenings, got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.do(t.Context(), "down.example", "down.example/a:1", ok)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the circuit never let a probe through: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by deadline
	}
	if _, err := b.do(t.Context(), "down.example", "down.example/a:1", ok); err != nil {
		t.Errorf("after a successful probe: %v, want the circuit closed", err)
	}
}

// The inspector keys the circuit by the image's registry host: a host that accepts connections
// and never answers is asked DefaultBreakerFailures times, then its images fail at once with the
// reason.
func TestRegistryInspectorBreaksCircuit(t *testing.T) {
	host, _ := hangingHost(t)
	ri, err := NewRegistryInspector(Options{Timeout: 100 * time.Millisecond, BreakerOpenFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range DefaultBreakerFailures {
		_, err := ri.Architectures(t.Context(), fmt.Sprintf("%s/app:%d", host, i), credentials.Candidates{})
		if r := ReasonOf(err); r != ReasonTimeout {
			t.Fatalf("inspection %d: %v (reason %q), want a timeout", i, err, r)
		}
	}
	_, err = ri.Architectures(t.Context(), host+"/other:1", credentials.Candidates{})
	if r := ReasonOf(err); r != ReasonCircuitOpen {
		t.Fatalf("after %d timeouts: %v (reason %q), want %q", DefaultBreakerFailures, err, r, ReasonCircuitOpen)
	}
}

// hangingHost listens on a loopback port, accepts connections and never answers them; it
// returns its host:port and the count of connections accepted so far.
func hangingHost(t *testing.T) (string, func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // held open, never answered
			mu.Unlock()
		}
	}()
	return l.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(held)
	}
}
