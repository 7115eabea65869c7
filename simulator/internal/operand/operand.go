// Package operand runs the operator's components in-process for the
// simulator: the scheduling-gate webhook and the pod placement controller,
// each started through the operator's public start-up package
// (operator/pkg/components), never a copy of its logic. Each component is an
// Operand that a timeline event can stop and start again.
package operand

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Operand is one component of the operator running in-process.
type Operand interface {
	// Start runs the component and returns once it is ready (or failed).
	Start(ctx context.Context) error
	// Stop stops the component and waits until it has returned.
	Stop()
}

// RunFunc runs a component until ctx is done; it is what the operator's
// start-up package exports (components.RunWebhook, components.RunPlacementController).
type RunFunc func(ctx context.Context) error

// Runner is an Operand around a RunFunc: Start launches it and waits until
// the component closes its ready channel (its components.Common.Ready callback: a
// push, nothing is polled), Stop cancels it. Between a Stop and the next Start, Prepare runs, so a
// restart gets fresh state (a new metrics registry).
type Runner struct {
	// Name names the component in errors.
	Name string
	// Prepare builds the RunFunc of each start and the channel it closes
	// once ready (nil: ready as soon as it runs).
	Prepare func() (RunFunc, <-chan struct{}, error)
	// ReadyTimeout bounds the wait for readiness; default 30s.
	ReadyTimeout time.Duration
	// OnStop runs after the component has returned (e.g. to keep its final
	// metrics).
	OnStop func()

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

var _ Operand = (*Runner)(nil)

// Start implements Operand.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return fmt.Errorf("%s: already running", r.Name)
	}
	run, ready, err := r.Prepare()
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	timeout := r.ReadyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if err := waitReady(runCtx, ready, done, timeout); err != nil {
		cancel()
		<-done
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	r.cancel, r.done = cancel, done
	return nil
}

// waitReady waits until ready is closed, the component returns, or the
// timeout passes.
func waitReady(ctx context.Context, ready <-chan struct{}, done chan error, timeout time.Duration) error {
	if ready == nil {
		return nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case err := <-done:
		done <- err // keep it for the caller's drain
		if err == nil {
			err = errors.New("returned before it was ready")
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("not ready after %s", timeout)
	}
}

// Stop implements Operand. It is a no-op when the component is not running.
func (r *Runner) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.cancel, r.done = nil, nil
	if r.OnStop != nil {
		r.OnStop()
	}
}

// Running reports whether the component runs.
func (r *Runner) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancel != nil
}

// Err returns the component's error if it returned on its own, without
// blocking; nil while it runs.
func (r *Runner) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		return nil
	}
	select {
	case err := <-r.done:
		r.done <- err
		if err == nil {
			err = errors.New("returned while it should run")
		}
		return fmt.Errorf("%s: %w", r.Name, err)
	default:
		return nil
	}
}
