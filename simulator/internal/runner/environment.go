package runner

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/archgate/archgate/simulator/internal/procs"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/vcs"
)

// environment describes the machine and the code.
func environment(ctx context.Context, root string) report.Environment {
	e := report.Environment{
		GoVersion: goVersion(),
		Cores:     runtime.NumCPU(),
		CPULimit:  procs.CPULimit(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
	}
	e.Host, _ = os.Hostname()
	if st, err := vcs.Describe(ctx, root); err == nil {
		e.Commit, e.Dirty, e.Tree = st.Commit, st.Dirty, st.Tree
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		e.OS += " " + utsString(u.Release[:])
	}
	e.CPUModel = cpuModel()
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		e.MemoryBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return e
}

func utsString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
