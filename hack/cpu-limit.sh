#!/usr/bin/env bash
# Runs a command on a share of the machine's CPU, as a slower machine of the
# same size would give it: a cgroup CPU quota (cgroup v2 cpu.max, or v1
# cpu.cfs_quota_us) over the command and every process it starts.
#   hack/cpu-limit.sh 0.85 bin/simulator repeat ...
# Needs write access to the cgroup tree (root on these machines). The
# simulator reads the quota back (report: environment, cpuLimit) and judges
# utilization against it.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 FRACTION COMMAND [ARGS...]" >&2
  exit 2
fi
fraction=$1
shift
cores=$(nproc)
period=100000
quota=$(awk -v f="$fraction" -v c="$cores" -v p="$period" 'BEGIN { if (f <= 0 || f > 1) exit 1; printf "%d", f * c * p }') || {
  echo "$0: FRACTION must be within (0, 1], got $fraction" >&2
  exit 2
}
name=archgate-cpu-limit-$$
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  root=/sys/fs/cgroup
  dir=$root/$name
  mkdir "$dir"
  echo "$quota $period" > "$dir/cpu.max"
elif [[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
  root=/sys/fs/cgroup/cpu
  dir=$root/$name
  mkdir "$dir"
  echo "$period" > "$dir/cpu.cfs_period_us"
  echo "$quota" > "$dir/cpu.cfs_quota_us"
else
  echo "$0: no cgroup CPU controller found under /sys/fs/cgroup" >&2
  exit 2
fi
# Leave the cgroup before removing it: a cgroup with members cannot be removed.
trap 'echo $$ > "$root/cgroup.procs"; rmdir "$dir" 2>/dev/null || true' EXIT
echo $$ > "$dir/cgroup.procs"
echo "cpu-limit: $fraction of $cores cores (quota ${quota}us per ${period}us) for: $*" >&2
"$@"
