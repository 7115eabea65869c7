// Package procfs reads processes from /proc: identity across PID reuse, parent, CPU time and
// RSS, and kills process groups. testenv records and reaps the control-plane processes with it,
// and the simulator measures and guards them. Linux only: elsewhere /proc is missing, reads
// fail and nothing is found.
package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClockTicks is USER_HZ, the unit of /proc/<pid>/stat and /proc/stat times (100 on every
// Linux architecture the simulator runs on).
const ClockTicks = 100

// ID names a process across PID reuse: a recycled PID has another start time.
type ID struct {
	// PID is the process id.
	PID int
	// Start is the start time in clock ticks since boot.
	Start uint64
}

// Proc is a process's identity and resource use.
type Proc struct {
	ID
	// Name is the command name (comm).
	Name string
	// PPID is the parent's PID.
	PPID int
	// CPU is user plus system time.
	CPU time.Duration
	// RSS and PeakRSS (VmHWM) in bytes.
	RSS, PeakRSS int64
}

// Read reads /proc/<pid>; ok is false when the process is gone or a zombie.
func Read(pid int) (Proc, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Proc{}, false
	}
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return Proc{}, false
	}
	// Fields after the name start at field 3 (state): ppid is field 4,
	// utime 14, stime 15, starttime 22.
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 20 || f[0] == "Z" {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseUint(f[11], 10, 64)
	stime, err3 := strconv.ParseUint(f[12], 10, 64)
	start, err4 := strconv.ParseUint(f[19], 10, 64)
	if errors.Join(err1, err2, err3, err4) != nil {
		return Proc{}, false
	}
	p := Proc{
		ID:   ID{PID: pid, Start: start},
		Name: string(data[open+1 : end]),
		PPID: ppid,
		CPU:  time.Duration(utime+stime) * time.Second / ClockTicks,
	}
	p.RSS, p.PeakRSS = memory(pid)
	return p, true
}

// memory reads VmRSS and VmHWM from /proc/<pid>/status.
func memory(pid int) (rss, peak int64) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []string{"VmRSS:", "VmHWM:"} {
			rest, ok := strings.CutPrefix(line, k)
			if !ok {
				continue
			}
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if k == "VmRSS:" {
				rss = kb << 10
			} else {
				peak = kb << 10
			}
		}
	}
	return rss, peak
}

// Alive reports whether id still names a running process.
func Alive(id ID) bool {
	p, ok := Read(id.PID)
	return ok && p.Start == id.Start
}

// Children returns the running direct children of parent.
func Children(parent int) []Proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Read(pid); ok && p.PPID == parent {
			out = append(out, p)
		}
	}
	return out
}

// KillGroup kills id's process group (envtest starts each component in its
// own group) and id itself, if id is still alive.
func KillGroup(id ID) bool {
	if !Alive(id) {
		return false
	}
	_ = syscall.Kill(-id.PID, syscall.SIGKILL)
	_ = syscall.Kill(id.PID, syscall.SIGKILL)
	return true
}
