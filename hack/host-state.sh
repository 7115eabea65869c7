#!/usr/bin/env bash
# Prints the host state the real-node cluster must not change, for a before/after diff:
#   hack/host-state.sh > before; make cluster-up ...; make cluster-down; hack/host-state.sh | diff before -
# Routes (all tables), links and addresses, iptables/ip6tables rules (every table, no
# counters), sysctls (volatile counters left out), mounts, the paths the kubelet and
# containerd write by default, and the cgroup directories.
set -uo pipefail
section() { echo "### $*"; }
section routes; ip route show table all; ip -6 route show table all
section links; ip -o link show | sed 's/ qlen [0-9]*//'
section addresses; ip -o addr show
for t in filter nat mangle raw security; do
  section "iptables $t"; iptables -t "$t" -S 2>&1
  section "ip6tables $t"; ip6tables -t "$t" -S 2>&1
done
section sysctls
sysctl -a 2>/dev/null | grep -Ev '^(kernel\.random\.|fs\.(dentry-state|inode-nr|inode-state|file-nr|aio-nr)|kernel\.ns_last_pid|net\.netfilter\.nf_conntrack_count|kernel\.pty\.nr|fs\.quota\.|vm\.stat_refresh|kernel\.sched_domain|net\.ipv4\.tcp_(mem|fastopen_key)|fs\.binfmt_misc|kernel\.core_pattern_state)'
section mounts; findmnt -rn -o TARGET,SOURCE,FSTYPE,OPTIONS | sort
section paths
for p in /var/lib/kubelet /var/lib/cni /var/lib/containerd /run/containerd /run/netns /var/log/pods /var/log/containers /etc/cni /opt/cni; do
  [[ -e $p ]] && echo "exists: $p"
done
# Top-level cgroups and their children, except the machine's own per-process cgroups
# (process_api/*), which come and go with other users' processes.
section cgroups; find /sys/fs/cgroup -mindepth 2 -maxdepth 3 -type d -not -path '*/process_api/*' 2>/dev/null | sort
