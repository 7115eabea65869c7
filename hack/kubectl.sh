#!/usr/bin/env bash
# Builds kubectl into bin/k8s/kubectl, once, from the k8s.io/kubernetes version pinned in
# simulator/go.mod (the control plane's). kubectl's own dependencies are not in the
# simulator's go.sum, so it is built in a scratch module under .cache/kubectl that copies the
# simulator's staging replaces. `make deploy` prefers a kubectl on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=

out=bin/k8s/kubectl
kube=$(cd simulator && go list -m -f '{{.Version}}' k8s.io/kubernetes)
want="kubectl=${kube} $(go env GOVERSION)"
if [[ -x $out && -f $out.version && "$(cat "$out.version")" == "$want" ]]; then
  exit 0
fi

scratch=.cache/kubectl
rm -rf "$scratch"
mkdir -p "$scratch" bin/k8s
{
  echo "module archgate.local/kubectl"
  echo
  echo "go $(cd simulator && go list -m -f '{{.GoVersion}}')"
  echo
  echo "tool k8s.io/kubernetes/cmd/kubectl"
  echo
  echo "require k8s.io/kubernetes ${kube}"
  echo
  grep -E '^replace k8s\.io/' simulator/go.mod
} > "$scratch/go.mod"
minor=${kube#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${kube} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
echo "building kubectl ${kube} from module sources into ${out} (about a minute once the modules are cached)"
(cd "$scratch" && go mod tidy && go build -o "../../$out" -ldflags "$ldflags" k8s.io/kubernetes/cmd/kubectl)
echo "$want" > "$out.version"
