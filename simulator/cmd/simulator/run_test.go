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

func TestProgressOutput(t *testing.T) {
	for _, tc := range []struct {
		mode            string
		quiet, terminal bool
		want            *os.File // nil: no progress
		live, err       bool
	}{
		{mode: progressAuto, terminal: true, want: os.Stdout, live: true},
		{mode: progressAuto, want: os.Stderr},
		{mode: progressAuto, quiet: true, terminal: true},
		{mode: progressLines, quiet: true, want: os.Stderr},
		{mode: progressLive, want: os.Stdout, live: true},
		{mode: progressNone, terminal: true},
		{mode: "verbose", err: true},
	} {
		w, live, err := progressOutput(tc.mode, tc.quiet, tc.terminal)
		var got *os.File
		if f, ok := w.(*os.File); ok {
			got = f
		}
		if got != tc.want || live != tc.live || (err != nil) != tc.err {
			t.Errorf("progressOutput(%q, quiet %t, terminal %t) = %v, live %t, err %v; want %v, live %t, error %t",
				tc.mode, tc.quiet, tc.terminal, w, live, err, tc.want, tc.live, tc.err)
		}
	}
}
