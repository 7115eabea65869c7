#!/usr/bin/env bash
# Builds kube-apiserver and etcd from Go module sources into bin/k8s, once.
# The versions are the ones pinned in simulator/go.mod (tool directives); a
# VERSION stamp lets later runs skip the build while the pins are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib.sh
export GOTOOLCHAIN=local GOWORK=off

out=bin/k8s
mod() { (cd simulator && go list -m -f '{{.Version}}' "$1"); }
kube=$(mod k8s.io/kubernetes)
etcd=$(mod go.etcd.io/etcd/server/v3)
want="kube-apiserver=${kube} etcd=${etcd} $(go env GOVERSION)"

if [[ -x $out/kube-apiserver && -x $out/etcd && -f $out/VERSION && "$(cat $out/VERSION)" == "$want" ]]; then
  echo "control plane up to date in $out ($want)"
  exit 0
fi

mkdir -p "$out"
rm -f "$out/VERSION"
ldflags=$(kube_ldflags "$kube")
echo "building kube-apiserver ${kube} from module sources (several minutes on a cold cache)"
(cd simulator && go build -o "../$out/kube-apiserver" -ldflags "$ldflags" k8s.io/kubernetes/cmd/kube-apiserver)
echo "building etcd ${etcd} from module sources"
(cd simulator && go build -o "../$out/etcd" -ldflags "-s -w" go.etcd.io/etcd/server/v3)
echo "$want" > "$out/VERSION"
echo "control plane built in $out ($want)"
