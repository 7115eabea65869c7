package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPULimit returns the CPU quota, in cores, of the cgroup the simulator runs
// in (hack/cpu-limit.sh sets one to stand in for a slower machine), or 0
// when there is none. cgroup v2 reads cpu.max, v1 cpu.cfs_quota_us over
// cpu.cfs_period_us; the quota is inherited by every process the simulator
// starts.
func CPULimit() float64 {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return cpuLimit(string(data), os.ReadFile)
}

// cpuLimit parses /proc/self/cgroup and reads the quota files with read.
func cpuLimit(cgroups string, read func(string) ([]byte, error)) float64 {
	for _, line := range strings.Split(strings.TrimSpace(cgroups), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			if limit := cpuMaxV2(read, filepath.Join("/sys/fs/cgroup", parts[2], "cpu.max")); limit > 0 {
				return limit
			}
		case containsController(parts[1], "cpu"):
			dir := filepath.Join("/sys/fs/cgroup/cpu", parts[2])
			quota, qerr := readInt(read, filepath.Join(dir, "cpu.cfs_quota_us"))
			period, perr := readInt(read, filepath.Join(dir, "cpu.cfs_period_us"))
			if qerr == nil && perr == nil && quota > 0 && period > 0 {
				return float64(quota) / float64(period)
			}
		}
	}
	return 0
}

func containsController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// cpuMaxV2 reads "QUOTA PERIOD" (QUOTA "max": no limit).
func cpuMaxV2(read func(string) ([]byte, error), path string) float64 {
	data, err := read(path)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	quota, qerr := strconv.ParseFloat(f[0], 64)
	period, perr := strconv.ParseFloat(f[1], 64)
	if qerr != nil || perr != nil || period <= 0 {
		return 0
	}
	return quota / period
}

func readInt(read func(string) ([]byte, error), path string) (int64, error) {
	data, err := read(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}
