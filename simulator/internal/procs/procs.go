// Package procs looks after the simulator's child processes (the envtest
// kube-apiserver and etcd): it measures their CPU time and RSS (read with
// testenv/procfs) and runs a guard process that kills them if the simulator
// dies without stopping them (a panic in a goroutine, SIGKILL, a second
// Ctrl-C). Linux only.
package procs

import (
	"syscall"
	"time"
)

// Self returns the simulator's own CPU time and peak RSS from getrusage.
func Self() (cpu time.Duration, peakRSS int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu, ru.Maxrss << 10 // Maxrss is in KiB on Linux
}
