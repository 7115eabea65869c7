package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
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
	children  []procfs.ID
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
// run file. Without that file a later start cannot reap them if this test
// binary dies, so failing to write it is an error, not a detail.
func (r *reaper) recordChildren() error {
	self, ok := procfs.Read(os.Getpid())
	if !ok {
		return nil // no /proc: not Linux, nothing to record (see reaper)
	}
	r.children = childrenRunning(os.Getpid(), r.assetsDir)
	return writePIDFile(r.file, append([]procfs.ID{self.ID}, r.children...))
}

// writePIDFile writes one "pid start-time" line per process to path.
func writePIDFile(path string, ids []procfs.ID) error {
	var b bytes.Buffer
	for _, id := range ids {
		fmt.Fprintf(&b, "%d %d\n", id.PID, id.Start)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("recording the control plane's processes for orphan cleanup: %w", err)
	}
	return nil
}

// killChildren kills the recorded process groups that are still alive.
func (r *reaper) killChildren() {
	for _, c := range r.children {
		procfs.KillGroup(c)
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
		if procfs.Alive(ids[0]) {
			continue
		}
		for _, c := range ids[1:] {
			if procfs.KillGroup(c) {
				killed++
			}
		}
		_ = os.Remove(f)
	}
	return killed
}

func readRunFile(path string) ([]procfs.ID, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids []procfs.ID
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var id procfs.ID
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &id.PID, &id.Start); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ids = append(ids, id)
	}
	return ids, sc.Err()
}

// childrenRunning lists the direct children of parent whose executable lives
// in dir.
func childrenRunning(parent int, dir string) []procfs.ID {
	var out []procfs.ID
	for _, c := range procfs.Children(parent) {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(c.PID), "exe"))
		if err == nil && filepath.Dir(exe) == dir {
			out = append(out, c.ID)
		}
	}
	return out
}
