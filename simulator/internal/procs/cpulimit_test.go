package procs

import (
	"io/fs"
	"testing"
)

func TestCPULimit(t *testing.T) {
	for name, tc := range map[string]struct {
		cgroups string
		files   map[string]string
		want    float64
	}{
		"v1 without quota": {
			cgroups: "2:cpuacct:/\n1:cpu:/\n0::/",
			files:   map[string]string{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"},
		},
		"v1 quota of 1.7 cores": {
			cgroups: "1:cpu,cpuacct:/archgate-cpu-limit-1\n0::/",
			files: map[string]string{"/sys/fs/cgroup/cpu/archgate-cpu-limit-1/cpu.cfs_quota_us": "170000\n",
				"/sys/fs/cgroup/cpu/archgate-cpu-limit-1/cpu.cfs_period_us": "100000\n"},
			want: 1.7,
		},
		"v2 quota": {
			cgroups: "0::/archgate-cpu-limit-1",
			files:   map[string]string{"/sys/fs/cgroup/archgate-cpu-limit-1/cpu.max": "170000 100000\n"},
			want:    1.7,
		},
		"v2 max": {
			cgroups: "0::/",
			files:   map[string]string{"/sys/fs/cgroup/cpu.max": "max 100000\n"},
		},
		"unreadable": {cgroups: "0::/x"},
	} {
		t.Run(name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				if s, ok := tc.files[p]; ok {
					return []byte(s), nil
				}
				return nil, fs.ErrNotExist
			}
			if got := cpuLimit(tc.cgroups, read); got != tc.want {
				t.Errorf("cpuLimit = %v, want %v", got, tc.want)
			}
		})
	}
}
