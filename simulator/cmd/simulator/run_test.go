package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestWatchInterrupts checks the signal handling the run command relies
// on: the first signal cancels and sets the flag (read concurrently, so
// `go test -race` catches an unsynchronised flag), the second kills.
func TestWatchInterrupts(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	killed := make(chan struct{})
	interrupted := watchInterrupts(sigs, cancel, func() { close(killed) })
	if interrupted.Load() {
		t.Fatal("interrupted before any signal")
	}
	sigs <- os.Interrupt
	deadline := time.Now().Add(10 * time.Second)
	for !interrupted.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the first signal did not set the flag within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the run within 10s")
	}
	sigs <- os.Interrupt
	select {
	case <-killed:
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not kill within 10s")
	}
}
