#!/usr/bin/env bash
# A hermetic real-node Kubernetes cluster: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd (+runc, bridge CNI), kubelet, kube-proxy and a registry the kubelet
# pulls from (the fake registry over TLS on the node IP), all inside their own PID, network and
# mount namespaces (unshare), all state under one directory.
#
#   hack/cluster.sh up      start it; wait until the node is Ready; print the kubeconfig path
#   hack/cluster.sh down    stop it by PID (also after a killed run) and remove its cgroups
#   hack/cluster.sh status  say whether it runs
#
# Host isolation:
# - PID namespace: the namespace's init is this script ("inside"); killing it (cluster-down,
#   by the PID recorded in $STATE/pid) makes the kernel kill every process of the cluster,
#   containers and shims included. Nothing is left to find by name.
# - Network namespace: the loopback interface holds the node IP, the bridge CNI adds the pod
#   bridge, kube-proxy's and the kubelet's iptables rules and the per-netns sysctls stay
#   inside. The namespace has no link to the host: the default route is a blackhole, only the
#   node, pod and service ranges are routed. The host reaches the apiserver through a Unix
#   socket in $STATE (unixfwd) and a loopback port: no veth, route or rule on the host.
# - Mount namespace (private propagation): /run, /var/lib, /var/log are bind mounts of
#   directories in $STATE, and the three non-namespaced sysctl files the kubelet writes
#   (kernel.panic, kernel.panic_on_oops, vm.overcommit_memory) are bind mounts of files in
#   $STATE: the kubelet writes there and the host keeps its values.
# - kwok (sigs.k8s.io/kwok) runs inside too and keeps the fake nodes kwok-arm64, kwok-ppc64le and
#   kwok-s390x alive beside the real amd64 node: Ready through node leases, pods bound to them
#   Running. They carry the taint kwok.x-k8s.io/node=fake:NoSchedule, so that only pods that
#   tolerate it land there (archgate's own pods must run on the real node), and they go with the
#   cluster's etcd at cluster-down.
# - cgroups (v1 here) are not namespaced for writes: the kubelet's cgroupRoot is one
#   directory per cluster, created by up and removed (depth first) by down.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

STATE=${CLUSTER_STATE:-$ROOT/bin/cluster-state}
K8S_BIN=${ARCHGATE_ASSETS:-$ROOT/bin/k8s}   # kube-apiserver, etcd (hack/control-plane.sh)
NODE_BIN=$ROOT/bin/cluster                  # hack/cluster-components.sh
NODE_NAME=${CLUSTER_NODE_NAME:-realnode-amd64}
NODE_IP=10.200.0.2
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
APISERVER_SERVICE_IP=10.96.0.1
HOST_PORT=${CLUSTER_HOST_PORT:-0}            # 0: a free loopback port
CGROUP_ROOT=/archgate-cluster-$(echo -n "$STATE" | sha256sum | cut -c1-8)
PAUSE_IMAGE=localhost/archgate/pause:1
REGISTRY_PORT=5000 # the in-cluster registry: $NODE_IP:$REGISTRY_PORT
# The registry's one user, allowed to pull private/** (realnode.PrivateUser, PrivatePassword).
REGISTRY_USER=e2e REGISTRY_PASSWORD=archgate-e2e
# The scenarios' registry (simulator run --kubeconfig): CLUSTER_REGISTRY_CATALOG, when set, is a
# catalog file (simulator catalog writes it; make cluster-up does) served over TLS at
# $NODE_IP:$SIM_REGISTRY_PORT, every repository anonymous, plus one user for pull secrets.
SIM_REGISTRY_PORT=5001
SIM_REGISTRY_USER=sim SIM_REGISTRY_PASSWORD=archgate-sim
# Its request counters (Prometheus text at /metrics) on a Unix socket the host reaches: simulator run
# --registry-metrics counts the registry requests per image of a run with them.
SIM_REGISTRY_METRICS=$STATE/run/registry-sim-metrics.sock
KWOK_ARCHS=(arm64 ppc64le s390x) # a kwok node kwok-<arch> each
KWOK_POD_CIDR=10.245.0.0/16      # pod IPs kwok makes up (never routed)

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# A PID file holds "PID START": START (field 22 of /proc/PID/stat, the start time in clock
# ticks since boot) tells the recorded process from a later one that reuses its PID.
record() { echo "$2 $(proc_start "$2")" >"$STATE/$1"; }
proc_start() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }
alive() { # alive FILE: the process FILE records still runs
  local pid start
  [[ -f $STATE/$1 ]] || return 1
  read -r pid start <"$STATE/$1"
  [[ -n $start && "$(proc_start "$pid")" == "$start" ]]
}
pid_of() { cut -d' ' -f1 "$STATE/$1"; }
running() { alive pid; }

cmd_status() {
  if running; then echo "running (PID $(pid_of pid)), kubeconfig $STATE/kubeconfig"; else echo "not running"; exit 1; fi
}

# ---------- down ----------

cmd_down() {
  local pid f
  for f in pid forwarder.pid; do
    [[ -f $STATE/$f ]] || continue
    pid=$(pid_of "$f")
    if alive "$f"; then
      log "killing ${f%.pid} (PID $pid)"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$STATE/$f"
  done
  remove_cgroups
  log "down"
}

# remove_cgroups removes the cluster's cgroup tree in every v1 hierarchy, leaves first. The
# kernel refuses to remove a cgroup with live tasks; after the PID namespace died there are none
# (a just-killed task can linger a moment, hence the retries).
remove_cgroups() {
  local h d
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h$CGROUP_ROOT ]] || continue
    for _ in $(seq 50); do
      find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [[ -d $h$CGROUP_ROOT ]] || break
      sleep 0.2
    done
    [[ -d $h$CGROUP_ROOT ]] && log "warning: could not remove $h$CGROUP_ROOT"
  done
  return 0
}

# ---------- up (host side) ----------

cmd_up() {
  if running; then log "already running (PID $(pid_of pid))"; echo "$STATE/kubeconfig"; return; fi
  cmd_down >/dev/null 2>&1 || true # leftovers of a killed run
  check_prerequisites
  if [[ -n ${CLUSTER_REGISTRY_CATALOG:-} ]]; then
    [[ -f $CLUSTER_REGISTRY_CATALOG ]] || die "CLUSTER_REGISTRY_CATALOG=$CLUSTER_REGISTRY_CATALOG: no such file"
    CLUSTER_REGISTRY_CATALOG=$(realpath "$CLUSTER_REGISTRY_CATALOG")
    export CLUSTER_REGISTRY_CATALOG
  fi
  # Only a directory this script made (marked) or an empty/missing one is wiped.
  if [[ -d $STATE && -n "$(ls -A "$STATE")" && ! -f $STATE/.archgate-cluster-state ]]; then
    die "CLUSTER_STATE=$STATE is a non-empty directory this script did not create: refusing to wipe it"
  fi
  rm -rf "$STATE"
  mkdir -p "$STATE"
  touch "$STATE/.archgate-cluster-state"
  mkdir -p "$STATE"/{pki,logs,run,var-lib,var-log,sysctl,config,cni/net.d,cni/ipam,kubelet,containerd,pod-logs}
  make_pki
  write_configs
  make_cgroups
  # setsid: the cluster survives the shell that started it; --kill-child: if unshare itself is
  # killed, the namespace init is killed too.
  setsid unshare --pid --net --mount --propagation private --fork --kill-child --mount-proc \
    "$ROOT/hack/cluster.sh" inside </dev/null >"$STATE/logs/inside.log" 2>&1 &
  record pid $!
  start_forwarder
  wait_ready
  log "node $NODE_NAME Ready; KUBECONFIG=$STATE/kubeconfig"
  echo "$STATE/kubeconfig"
}

check_prerequisites() {
  local b
  for b in "$K8S_BIN/kube-apiserver" "$K8S_BIN/etcd"; do [[ -x $b ]] || die "$b missing: run make control-plane"; done
  for b in kubelet kube-controller-manager kube-scheduler kube-proxy containerd containerd-shim-runc-v2 ctr pause unixfwd fakeregistry kwok kwok-stages.yaml; do
    [[ -e $NODE_BIN/$b ]] || die "$NODE_BIN/$b missing: run make cluster-components"
  done
  command -v runc >/dev/null || die "runc missing: run make cluster-packages"
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || die "CNI plugins missing: run make cluster-packages"
  [[ -d /sys/fs/cgroup/memory ]] || die "needs a cgroup v1 host (the recipe was verified there)"
}

# cert NAME CN [O] [SAN]: a certificate signed by the cluster CA (a server certificate when SAN
# is given, a client certificate otherwise; O is the Kubernetes group).
cert() {
  local name=$1 cn=$2 org=${3:-} san=${4:-} subj="/CN=$2"
  [[ -n $org ]] && subj="/O=$org/CN=$cn"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=digitalSignature,keyEncipherment"
    if [[ -n $san ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"; else echo "extendedKeyUsage=clientAuth"; fi
  } >"$name.ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

make_pki() {
  (
    cd "$STATE/pki"
    openssl req -x509 -new -newkey rsa:2048 -nodes -keyout ca.key -subj "/CN=archgate-cluster-ca" -days 30 -out ca.crt 2>/dev/null
    cert apiserver kube-apiserver "" "IP:127.0.0.1,IP:$NODE_IP,IP:$APISERVER_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
    cert admin archgate-cluster-admin system:masters
    cert kubelet "system:node:$NODE_NAME" system:nodes
    cert kube-controller-manager system:kube-controller-manager
    cert kube-scheduler system:kube-scheduler
    cert kube-proxy system:kube-proxy
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

# kubeconfig NAME SERVER: a kubeconfig for the client certificate NAME.
kubeconfig() {
  cat >"$STATE/config/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: archgate
  cluster: {server: "$2", certificate-authority: "$STATE/pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$STATE/pki/$1.crt", client-key: "$STATE/pki/$1.key"}
contexts:
- name: archgate
  context: {cluster: archgate, user: $1}
current-context: archgate
EOF
}

write_configs() {
  local c
  for c in kubelet kube-controller-manager kube-scheduler kube-proxy admin; do kubeconfig "$c" "https://$NODE_IP:6443"; done
  echo "nameserver 127.0.0.1" >"$STATE/config/resolv.conf" # no DNS leaves the namespace
  printf '0\n' >"$STATE/sysctl/panic"; printf '0\n' >"$STATE/sysctl/panic_on_oops"; printf '0\n' >"$STATE/sysctl/overcommit_memory"
  envsubst_file containerd.toml
  envsubst_file kubelet.yaml
  envsubst_file kube-proxy.yaml
  envsubst_file 10-bridge.conflist "$STATE/cni/net.d/10-bridge.conflist"
}

# envsubst_file NAME [DEST]: hack/cluster/NAME with ${VAR}s of this script replaced.
envsubst_file() {
  local dest=${2:-$STATE/config/$1}
  STATE=$STATE ARCH=${ARCH:-} NODE_NAME=$NODE_NAME NODE_IP=$NODE_IP POD_CIDR=$POD_CIDR CGROUP_ROOT=$CGROUP_ROOT \
    PAUSE_IMAGE=$PAUSE_IMAGE perl -pe 's/\$\{(\w+)\}/exists $ENV{$1} ? $ENV{$1} : die "unset $1"/ge' \
    "$ROOT/hack/cluster/$1" >"$dest"
}

make_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ $h == */unified/ ]] && continue # the v2 mount of a hybrid host: the kubelet uses v1
    mkdir -p "$h$CGROUP_ROOT"
    if [[ -f ${h}cpuset.cpus ]]; then
      cat "${h}cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
      cat "${h}cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

# start_forwarder relays a loopback port on the host to the apiserver inside, through the
# Unix socket the namespace's unixfwd listens on, and writes the host's admin kubeconfig.
start_forwarder() {
  local port=$HOST_PORT
  [[ $port == 0 ]] && port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  setsid "$NODE_BIN/unixfwd" listen-tcp "127.0.0.1:$port" "$STATE/run/apiserver.sock" </dev/null >"$STATE/logs/forwarder.log" 2>&1 &
  record forwarder.pid $!
  kubeconfig admin "https://127.0.0.1:$port"
  cp "$STATE/config/admin.kubeconfig" "$STATE/kubeconfig"
  kubeconfig admin "https://$NODE_IP:6443" # the one used inside stays on the node IP
}

# wait_ready polls, through the host kubeconfig's port, until the node is Ready and the default
# ServiceAccount exists (pods cannot be created in default before).
wait_ready() {
  local server
  server=$(sed -n 's/.*server: "\([^"]*\)".*/\1/p' "$STATE/kubeconfig")
  for _ in $(seq 600); do
    running || die "the cluster exited; see $STATE/logs/"
    if node_ready "$server" "$NODE_NAME" && all_kwok_ready "$server" &&
      api "$server/api/v1/namespaces/default/serviceaccounts/default" >/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  die "node $NODE_NAME or a kwok node not Ready (or no default ServiceAccount) after 300 s; see $STATE/logs/"
}

node_ready() { api "$1/api/v1/nodes/$2" | grep -q '"type":"Ready","status":"True"'; }
all_kwok_ready() {
  local arch
  for arch in "${KWOK_ARCHS[@]}"; do node_ready "$1" "kwok-$arch" || return 1; done
}

# api URL: GET as the cluster admin. A user agent other than curl's: the apiserver
# pretty-prints JSON for curl.
api() {
  curl -sf -A archgate-cluster --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" --key "$STATE/pki/admin.key" "$1" 2>/dev/null
}

# ---------- inside the namespaces (PID 1) ----------

cmd_inside() {
  isolate_host_paths
  setup_network
  export PATH="$NODE_BIN:$PATH" # containerd finds its shim first, then Debian's runc
  start etcd "$K8S_BIN/etcd" --data-dir "$STATE/etcd" --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 --unsafe-no-fsync
  wait_url http://127.0.0.1:2379/health
  start_apiserver
  wait_url "https://127.0.0.1:6443/readyz" --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" --key "$STATE/pki/admin.key"
  start unixfwd "$NODE_BIN/unixfwd" listen-unix "$STATE/run/apiserver.sock" 127.0.0.1:6443
  start_controllers
  start containerd "$NODE_BIN/containerd" --config "$STATE/config/containerd.toml"
  wait_file "$STATE/run/containerd/containerd.sock"
  import_pause
  start_registry
  start kubelet "$NODE_BIN/kubelet" --config "$STATE/config/kubelet.yaml" --kubeconfig "$STATE/config/kubelet.kubeconfig" \
    --root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME"
  start kube-proxy "$NODE_BIN/kube-proxy" --config "$STATE/config/kube-proxy.yaml"
  start_kwok
  log "all components started"
  wait -n || true
  log "a component exited; stopping the cluster"
  exit 1
}

isolate_host_paths() {
  mkdir -p "$STATE/run/containerd" "$STATE/var-lib" "$STATE/var-log"
  mount --bind "$STATE/run" /run
  mount --bind "$STATE/var-lib" /var/lib
  mount --bind "$STATE/var-log" /var/log
  mount --bind "$STATE/sysctl/panic" /proc/sys/kernel/panic
  mount --bind "$STATE/sysctl/panic_on_oops" /proc/sys/kernel/panic_on_oops
  mount --bind "$STATE/sysctl/overcommit_memory" /proc/sys/vm/overcommit_memory
}

# setup_network gives the node its IP on the namespace's loopback interface (the kernel here
# has no dummy link type; pods reach the address through cni0 like any local address).
setup_network() {
  ip link set lo up
  ip addr add "$NODE_IP/32" dev lo
  ip route add "$SERVICE_CIDR" dev lo # kube-proxy DNATs service IPs; they need a route first
  ip route add blackhole default      # nothing else leaves; pods: cni0's connected route
}

start() {
  local name=$1; shift
  "$@" >"$STATE/logs/$name.log" 2>&1 &
  log "started $name (PID $! in the cluster's PID namespace)"
}

start_apiserver() {
  local p=$STATE/pki
  start kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --secure-port 6443 --advertise-address "$NODE_IP" \
    --service-cluster-ip-range "$SERVICE_CIDR" --cert-dir "$STATE/apiserver" \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --authorization-mode Node,RBAC --enable-aggregator-routing=true --allow-privileged=true
}

start_controllers() {
  local p=$STATE/pki c=$STATE/config
  start kube-controller-manager "$NODE_BIN/kube-controller-manager" --kubeconfig "$c/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$c/kube-controller-manager.kubeconfig" --authorization-kubeconfig "$c/kube-controller-manager.kubeconfig" \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" --use-service-account-credentials \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --leader-elect=false --bind-address 127.0.0.1
  start kube-scheduler "$NODE_BIN/kube-scheduler" --kubeconfig "$c/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$c/kube-scheduler.kubeconfig" --authorization-kubeconfig "$c/kube-scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1
}

# start_kwok starts kwok for the nodes annotated kwok.x-k8s.io/node=fake and creates them. HOME
# is in the state directory: kwok reads (and may create) ~/.kwok.
start_kwok() {
  local arch
  mkdir -p "$STATE/kwok"
  # Niced: kwok stands in for the kubelets of nodes that have CPUs of their own in a real
  # cluster, so it should not take the control plane's and archgate's CPU on this machine.
  HOME=$STATE/kwok start kwok nice -n 10 "$NODE_BIN/kwok" --kubeconfig "$STATE/config/admin.kubeconfig" \
    --config "$NODE_BIN/kwok-stages.yaml" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-lease-duration-seconds 40 \
    --cidr "$KWOK_POD_CIDR" --node-ip "$NODE_IP"
  for arch in "${KWOK_ARCHS[@]}"; do
    ARCH=$arch envsubst_file kwok-node.json "$STATE/config/kwok-$arch.json"
    curl -sf -o /dev/null --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" --key "$STATE/pki/admin.key" \
      -H 'Content-Type: application/json' --data-binary "@$STATE/config/kwok-$arch.json" https://127.0.0.1:6443/api/v1/nodes ||
      die "creating node kwok-$arch failed"
  done
}

# import_pause imports the sandbox image (bin/cluster/pause.tar, an OCI layout archive).
import_pause() {
  "$NODE_BIN/ctr" --address "$STATE/run/containerd/containerd.sock" -n k8s.io images import \
    --base-name "${PAUSE_IMAGE%:*}" "$NODE_BIN/pause.tar" >"$STATE/logs/ctr-import.log" 2>&1
}

# start_registry serves, over TLS on the node IP, the pause layout as archgate/pause:1 (a
# linux/amd64-only image), when `make image` wrote it archgate's own index as
# archgate/archgate, and the generated images of hack/cluster/registry-catalog.yaml. Basic
# auth: private/** only for the user $REGISTRY_USER, the rest anonymous. containerd trusts its
# CA through certs.d ($STATE/certs.d/<host:port>/ca.crt).
start_registry() {
  local layouts=(--layout "archgate/pause=$NODE_BIN/pause-layout")
  [[ -f $ROOT/bin/image/index.json ]] && layouts+=(--layout "archgate/archgate=$ROOT/bin/image")
  start fakeregistry "$NODE_BIN/fakeregistry" serve --tls --addr "$NODE_IP:$REGISTRY_PORT" --hostname "$NODE_IP" \
    --certs-dir "$STATE/certs.d" --catalog "$ROOT/hack/cluster/registry-catalog.yaml" "${layouts[@]}" \
    --auth-mode basic --user "$REGISTRY_USER:$REGISTRY_PASSWORD" --pull "$REGISTRY_USER=private/**" \
    --anonymous 'archgate/**' --anonymous 'e2e/**'
  wait_file "$STATE/certs.d/$NODE_IP:$REGISTRY_PORT/ca.crt"
  [[ -n ${CLUSTER_REGISTRY_CATALOG:-} ]] || return 0
  start fakeregistry-sim "$NODE_BIN/fakeregistry" serve --tls --addr "$NODE_IP:$SIM_REGISTRY_PORT" --hostname "$NODE_IP" \
    --certs-dir "$STATE/certs.d" --catalog "$CLUSTER_REGISTRY_CATALOG" \
    --auth-mode basic --user "$SIM_REGISTRY_USER:$SIM_REGISTRY_PASSWORD" --pull "$SIM_REGISTRY_USER=**" --anonymous '**' \
    --metrics-addr "unix:$SIM_REGISTRY_METRICS"
  wait_file "$STATE/certs.d/$NODE_IP:$SIM_REGISTRY_PORT/ca.crt"
}

wait_url() {
  local url=$1; shift
  for _ in $(seq 600); do curl -sf "$@" "$url" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "$url not ready after 120 s"
}

wait_file() {
  for _ in $(seq 600); do [[ -e $1 ]] && return 0; sleep 0.2; done
  die "$1 missing after 120 s"
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  inside) cmd_inside ;;
  *) die "usage: $0 up|down|status" ;;
esac
