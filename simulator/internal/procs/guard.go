package procs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
)

// GuardCommand is the hidden subcommand that runs the guard process.
const GuardCommand = "__guard"

// Guard is the handle of a guard process: a copy of the simulator binary
// that reads process ids from a pipe and, when the pipe closes (the
// simulator exited or died), kills those still alive. It runs in its own
// process group and ignores terminal signals, so a Ctrl-C that stops the
// simulator cannot stop it first.
type Guard struct {
	mu  sync.Mutex
	w   io.WriteCloser
	cmd *exec.Cmd
	ids []procfs.ID
}

// StartGuard starts the guard process.
func StartGuard() (*Guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locating the simulator binary for the guard: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, GuardCommand)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting the guard process: %w", err)
	}
	r.Close()
	return &Guard{w: w, cmd: cmd}, nil
}

// Watch hands the guard processes to kill if the simulator dies.
func (g *Guard) Watch(ids ...procfs.ID) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		g.ids = append(g.ids, id)
		fmt.Fprintf(g.w, "%d %d\n", id.PID, id.Start)
	}
}

// KillNow kills the watched processes at once (second interrupt).
func (g *Guard) KillNow() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range g.ids {
		procfs.KillGroup(id)
	}
}

// Close ends the guard after a clean shutdown: it kills whatever is still
// alive of the watched processes (nothing, normally) and exits.
func (g *Guard) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.w.Close()
	_ = g.cmd.Wait()
}

// RunGuard is the guard process's main: it records ids from r until EOF,
// then kills those still alive.
func RunGuard(r io.Reader) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	var ids []procfs.ID
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var id procfs.ID
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &id.PID, &id.Start); err == nil {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		procfs.KillGroup(id)
	}
	return 0
}
