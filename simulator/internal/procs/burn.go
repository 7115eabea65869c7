package procs

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// burnPeriod is the duty cycle of Burn: short enough that every component
// meets the load within a scheduling tick, long enough to cost little.
const burnPeriod = 10 * time.Millisecond

// Burn keeps share of one CPU busy until ctx is done: pinned to the first
// CPU, it spins for share of every 10 ms and sleeps the rest. It is the
// scenarios' deterministic background load (a shared machine on purpose).
func Burn(ctx context.Context, share float64) error {
	if share <= 0 || share > 1 {
		return fmt.Errorf("burn share %v: want (0, 1]", share)
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning the background load to CPU 0: %w", err)
	}
	busy := time.Duration(share * float64(burnPeriod))
	for ctx.Err() == nil {
		start := time.Now()
		for time.Since(start) < busy {
		}
		if rest := burnPeriod - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
	}
	return nil
}
