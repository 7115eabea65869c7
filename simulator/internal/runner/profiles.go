package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/archgate/archgate/simulator/internal/operand"
)

// startProfiles takes, when Options.ProfileDir is set, a CPU and an allocation profile of
// kube-apiserver and a CPU profile of every component process over the first
// Options.ProfileDuration of the pass; the returned stop waits for them and
// adds a heap profile of each process at the pass's end.
func (r *run) startProfiles(ctx context.Context, pass string) (stop func()) {
	if r.opts.ProfileDir == "" {
		return func() {}
	}
	d := r.opts.ProfileDuration
	if d == 0 {
		d = 30 * time.Second
	}
	dir := r.opts.ProfileDir
	var wg sync.WaitGroup
	write := func(name string, fetch func(f *os.File) error) {
		path := filepath.Join(dir, pass+"-"+name)
		f, err := os.Create(path)
		if err != nil {
			r.logf("profile %s: %v", path, err)
			return
		}
		defer f.Close()
		if err := fetch(f); err != nil {
			r.logf("profile %s: %v", path, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.logf("profiles: %v", err)
		return func() {}
	}
	// The apiserver's allocations over the same span (a delta profile): what each pass makes
	// its garbage collector work for.
	for name, path := range map[string]string{"kube-apiserver.cpu.pprof": "/debug/pprof/profile", "kube-apiserver.allocs.pprof": "/debug/pprof/allocs"} {
		wg.Go(func() {
			write(name, func(f *os.File) error {
				raw, err := r.kube.client.CoreV1().RESTClient().Get().AbsPath(path).
					Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(ctx)
				if err != nil {
					return err
				}
				_, err = f.Write(raw)
				return err
			})
		})
	}
	procs := r.profiledProcesses()
	names := profileNames(procs)
	for i, p := range procs {
		wg.Go(func() {
			write(names[i]+".cpu.pprof", func(f *os.File) error { return p.Profile(ctx, "profile", d, f) })
		})
	}
	return func() {
		wg.Wait()
		for i, p := range procs {
			write(names[i]+".heap.pprof", func(f *os.File) error { return p.Profile(ctx, "heap", 0, f) })
		}
	}
}

// profiledProcesses are the processes that serve pprof: the cluster's (the scheduler) and
// archgate's components' in either mode (in operator mode every replica the kubelet runs).
func (r *run) profiledProcesses() []*operand.Process {
	return append(r.cluster.processes(), r.comps.processes()...)
}

// profileNames names each process's profiles after its component, numbered
// when several replicas of one component run (webhook-1, webhook-2, ...).
func profileNames(procs []*operand.Process) []string {
	count := map[string]int{}
	for _, p := range procs {
		count[p.Name]++
	}
	seen := map[string]int{}
	out := make([]string, len(procs))
	for i, p := range procs {
		out[i] = p.Name
		if count[p.Name] > 1 {
			seen[p.Name]++
			out[i] = fmt.Sprintf("%s-%d", p.Name, seen[p.Name])
		}
	}
	return out
}
