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
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sony/gobreaker/v2"
)

// Circuit breaking per registry host: a host that keeps making inspections wait until their
// timeout is not asked again for a while, so that its images fail at once instead of each
// holding a worker for the whole timeout. Only timeouts count: a host that fails fast (refused
// connections, 503 during an outage) holds no worker, the failure cache already spares it the
// repeated questions, and opening its circuit would only keep its pods waiting after it is back
// (registry-outage measured the worst gate hold at 25.5 s with fast failures counted, 12.7 s
// without).
const (
	// DefaultBreakerFailures is how many inspections of a host in a row must time out to
	// open its circuit.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpenFor is how long an open circuit refuses inspections before one is let
	// through to probe the host again; the others still fail at once while the probe is in
	// flight, so a host that never answers is asked one inspection at a time. Short, because
	// it adds to a real outage: a registry back after 10 s serves again at most 5 s later.
	DefaultBreakerOpenFor = 5 * time.Second
	// maxBreakerHosts bounds the hosts whose circuit is tracked: image references are the
	// tenants' to write, each may name a new host. The least recently used is forgotten.
	maxBreakerHosts = 4096
)

// hostBreakers are the circuit breakers of the registry hosts, created on first use.
type hostBreakers struct {
	failures uint32
	openFor  time.Duration
	metrics  *Metrics

	mu     sync.Mutex
	byHost *lru.Cache[string, *gobreaker.CircuitBreaker[Result]]
}

// newHostBreakers returns the breakers; failures 0 disables circuit breaking.
func newHostBreakers(failures int, openFor time.Duration, metrics *Metrics) *hostBreakers {
	if failures <= 0 {
		return nil
	}
	byHost, _ := lru.New[string, *gobreaker.CircuitBreaker[Result]](maxBreakerHosts) // size > 0: no error
	return &hostBreakers{failures: uint32(failures), openFor: openFor, metrics: metrics, byHost: byHost}
}

// callerGaveUp marks a failure that says nothing about the host: the caller's own deadline
// or cancellation ended the inspection first.
type callerGaveUp struct{ error }

func (e callerGaveUp) Unwrap() error { return e.error }

// do runs inspect through host's circuit. With the circuit open it fails at once with
// ReasonCircuitOpen, for image.
func (b *hostBreakers) do(ctx context.Context, host, image string, inspect func() (Result, error)) (Result, error) {
	if b == nil {
		return inspect()
	}
	res, err := b.breaker(host).Execute(func() (Result, error) {
		res, err := inspect()
		if err != nil && ctx.Err() != nil {
			return res, callerGaveUp{err}
		}
		return res, err
	})
	var gaveUp callerGaveUp
	switch {
	case errors.As(err, &gaveUp):
		return res, gaveUp.error
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		b.metrics.circuitRejections.Inc()
		return Result{}, &Error{Image: image, Reason: ReasonCircuitOpen, Err: fmt.Errorf(
			"inspections of registry %s timed out %d times in a row: not asked again for up to %s",
			host, b.failures, b.openFor)}
	}
	return res, err
}

func (b *hostBreakers) breaker(host string) *gobreaker.CircuitBreaker[Result] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb, ok := b.byHost.Get(host); ok {
		return cb
	}
	cb := gobreaker.NewCircuitBreaker[Result](gobreaker.Settings{
		Name:         host,
		MaxRequests:  1,
		Timeout:      b.openFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= b.failures },
		IsSuccessful: func(err error) bool { return ReasonOf(err) != ReasonTimeout },
		// Neither the caller's giving up nor a busy registry's refusal (no request was made)
		// says anything about the host.
		IsExcluded: func(err error) bool {
			return errors.As(err, new(callerGaveUp)) || ReasonOf(err) == ReasonRegistryBusy
		},
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.metrics.circuitOpenings.Inc()
			}
		},
	})
	b.byHost.Add(host, cb)
	return cb
}
