// Package calibrate times a fixed CPU workload in the harness, so that a
// report can say how fast the machine was when each pass started.
//
// Quiet runs of the same code on the same 2-core virtual machine measured the
// scheduler-alone pass at 9.9 and 13.8 CPU-s per 1,000 pods half an hour apart,
// with no steal time and no other process in /proc: the host's speed moved,
// and nothing in the reports could tell that from a regression. The workload
// hashes a fixed buffer: it allocates nothing, so the harness's own heap and
// garbage collector (which grow from pass to pass) cannot move the figure;
// only the machine's speed can. It is timed with testing.Benchmark, on one
// goroutine, while the cluster is idle.
package calibrate

import (
	"crypto/sha256"
	"testing"
)

// blockBytes is the buffer hashed per operation: large enough that the call
// overhead is noise, small enough to stay in the CPU's caches.
const blockBytes = 64 << 10

// NsPerOp returns the nanoseconds one SHA-256 of a 64 KiB buffer takes on
// this machine now, the best of rounds runs of testing.Benchmark (about a
// second each: the best is the least disturbed). Lower is faster.
func NsPerOp(rounds int) float64 {
	block := make([]byte, blockBytes)
	for i := range block {
		block[i] = byte(i)
	}
	best := 0.0
	for range max(rounds, 1) {
		r := testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				sha256.Sum256(block)
			}
		})
		if ns := float64(r.T.Nanoseconds()) / float64(max(r.N, 1)); best == 0 || ns < best {
			best = ns
		}
	}
	return best
}
