#!/usr/bin/env bash
# Builds the node and control-plane components the real-node cluster needs on
# top of bin/k8s (kube-apiserver, etcd: hack/control-plane.sh) into bin/cluster,
# once: kubelet, kube-controller-manager, kube-scheduler and kube-proxy from the
# k8s.io/kubernetes version pinned in hack/cluster-tools/go.mod (a build-only module,
# so the operator and simulator modules do not carry the kubelet's ~15 extra
# requirements), and containerd v2 with its runc shim and ctr from containerd's
# own module. A VERSION stamp lets later runs skip the build while the pins are
# unchanged. Builds run one at a time and niced: they are CPU-heavy. No
# -trimpath for the kubernetes binaries, like hack/control-plane.sh, so the
# packages kube-apiserver already compiled come from the build cache (same
# reason for leaving cgo at its default there). kwok (the fake nodes of the other
# architectures) is a tool of the same build-only module; its node and pod stages are the
# Stage files its module ships (what kwokctl embeds), concatenated into bin/cluster/kwok-stages.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib.sh
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false

out=bin/cluster
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
components=(kubelet kube-controller-manager kube-scheduler kube-proxy)
containerd_cmds=(containerd containerd-shim-runc-v2 ctr)

mod() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }
kube=$(mod hack/cluster-tools k8s.io/kubernetes)
apiserver_kube=$(mod simulator k8s.io/kubernetes)
kwok=$(mod hack/cluster-tools sigs.k8s.io/kwok)
if [[ $kube != "$apiserver_kube" ]]; then
  echo "hack/cluster-tools pins k8s.io/kubernetes ${kube} but simulator (kube-apiserver) pins ${apiserver_kube}: align them" >&2
  exit 1
fi
want="kubernetes=${kube} containerd=${CONTAINERD_VERSION} kwok=${kwok} $(go env GOVERSION)"

current() {
  [[ -f $out/VERSION && "$(cat "$out/VERSION")" == "$want" ]] || return 1
  local b
  for b in "${components[@]}" "${containerd_cmds[@]}" kwok; do [[ -x $out/$b ]] || return 1; done
}
# Small helpers, rebuilt every time (seconds, from the build cache): the pod sandbox binary
# packaged as the sandbox image (an OCI layout archive for `ctr images import`, made by the
# same tool as archgate's image), the Unix-socket relay to the apiserver and the fake
# registry the node pulls from.
mkdir -p "$out"
(cd hack/cluster-tools && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "../../$out/pause" ./pause)
(cd hack/cluster-tools && go build -o "../../$out/unixfwd" ./unixfwd)
(cd operator && go build -o "../$out/archgate-image" ./cmd/archgate-image)
(cd fakeregistry && go build -o "../$out/fakeregistry" ./cmd/fakeregistry) # the in-cluster registry
rm -rf "$out/pause-layout"
"$out/archgate-image" build --out "$out/pause-layout" --tag 1 --path /pause --binary "linux/$(go env GOARCH)=$out/pause" >/dev/null
tar -C "$out/pause-layout" --sort=name --mtime=@0 --owner=0 --group=0 -cf "$out/pause.tar" .
# kwok's stages, as kwokctl configures them for a cluster with node leases: nodes become Ready
# and renew a lease (the heartbeat), pods bound to them become Running, deleted pods go away.
stages=$(cd hack/cluster-tools && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  echo "---"; cat "$stages/$f.yaml"
done >"$out/kwok-stages.yaml"

if current; then
  echo "cluster components up to date in $out ($want)"
  exit 0
fi

rm -f "$out/VERSION"
ldflags=$(kube_ldflags "$kube")
for c in "${components[@]}"; do
  echo "building ${c} ${kube} from module sources"
  (cd hack/cluster-tools && nice go build -o "../../$out/$c" -ldflags "$ldflags" "k8s.io/kubernetes/cmd/$c")
done
echo "building containerd ${CONTAINERD_VERSION} from module sources"
pkgs=()
for c in "${containerd_cmds[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/${c}@${CONTAINERD_VERSION}"); done
CGO_ENABLED=0 GOBIN="$PWD/$out" nice go install -trimpath -ldflags "-s -w" -tags no_btrfs,no_devmapper,no_zfs "${pkgs[@]}"
echo "building kwok ${kwok} from module sources"
(cd hack/cluster-tools && nice go build -trimpath -ldflags "-s -w" -o "../../$out/kwok" sigs.k8s.io/kwok/cmd/kwok)
echo "$want" > "$out/VERSION"
echo "cluster components built in $out ($want)"
