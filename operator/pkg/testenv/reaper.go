package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A reaper records the control-plane processes a test binary starts, so that
// a later start can kill them if that binary died without stopping them (a
// `go test -timeout` panic or SIGKILL skips every deferred Stop). envtest
// starts each component in its own process group, so killing the group takes
// everything it forked. Linux only: elsewhere /proc is missing and it does
// nothing.
type reaper struct {
	assetsDir string
	file      string
	children  []procID
}

// procID names a process across PID reuse: the kernel start time (clock
// ticks since boot) differs for a recycled PID.
type procID struct {
	pid   int
	start uint64
}

func runDir() string { return filepath.Join(os.TempDir(), "archgate-testenv") }

func newReaper(assetsDir string) (*reaper, error) {
	if err := os.MkdirAll(runDir(), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", runDir(), err)
	}
	return &reaper{
		assetsDir: assetsDir,
		file:      filepath.Join(runDir(), fmt.Sprintf("%d.pids", os.Getpid())),
	}, nil
}

// recordChildren writes this process and its control-plane children to the
// run file.
func (r *reaper) recordChildren() {
	self, ok := readProc(os.Getpid())
	if !ok {
		return
	}
	r.children = childrenRunning(os.Getpid(), r.assetsDir)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %d\n", self.pid, self.start)
	for _, c := range r.children {
		fmt.Fprintf(&b, "%d %d\n", c.pid, c.start)
	}
	_ = os.WriteFile(r.file, b.Bytes(), 0o644)
}

// killChildren kills the recorded process groups that are still alive.
func (r *reaper) killChildren() {
	for _, c := range r.children {
		killGroup(c)
	}
}

func (r *reaper) release() { _ = os.Remove(r.file) }

// reapOrphans kills the process groups recorded by test binaries that no
// longer run.
func (r *reaper) reapOrphans() { ReapOrphans() }

// ReapOrphans kills control-plane processes left behind by test binaries that
// died without stopping them, and returns how many process groups it killed.
func ReapOrphans() int {
	files, _ := filepath.Glob(filepath.Join(runDir(), "*.pids"))
	killed := 0
	for _, f := range files {
		ids, err := readRunFile(f)
		if err != nil || len(ids) == 0 {
			_ = os.Remove(f)
			continue
		}
		if alive(ids[0]) {
			continue
		}
		for _, c := range ids[1:] {
			if killGroup(c) {
				killed++
			}
		}
		_ = os.Remove(f)
	}
	return killed
}

func readRunFile(path string) ([]procID, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids []procID
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var id procID
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &id.pid, &id.start); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ids = append(ids, id)
	}
	return ids, sc.Err()
}

func alive(id procID) bool {
	cur, ok := readProc(id.pid)
	return ok && cur.start == id.start
}

func killGroup(id procID) bool {
	if !alive(id) {
		return false
	}
	return syscall.Kill(-id.pid, syscall.SIGKILL) == nil
}

// childrenRunning lists the direct children of parent whose executable lives
// in dir.
func childrenRunning(parent int, dir string) []procID {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procID
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		id, ppid, ok := readProcWithParent(pid)
		if !ok || ppid != parent {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Dir(exe) != dir {
			continue
		}
		out = append(out, id)
	}
	return out
}

func readProc(pid int) (procID, bool) {
	id, _, ok := readProcWithParent(pid)
	return id, ok
}

// readProcWithParent parses /proc/<pid>/stat: the command name may contain
// spaces and parentheses, so fields are counted after its last ')'.
func readProcWithParent(pid int) (procID, int, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procID{}, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procID{}, 0, false
	}
	// Fields after the name start at field 3 (state); ppid is field 4 and
	// starttime field 22.
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return procID{}, 0, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	start, err2 := strconv.ParseUint(fields[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procID{}, 0, false
	}
	if fields[0] == "Z" {
		return procID{}, 0, false
	}
	return procID{pid: pid, start: start}, ppid, true
}
