#!/usr/bin/env bash
# Builds archgate's multi-architecture OCI image index into the OCI layout bin/image (tag
# IMAGE_TAG, default latest; binaries stamped with VERSION, default 0.0.0-dev, and the commit), and bin/image.tar (the layout as one archive) without a container engine: Go cross-compiles the binary per
# platform, operator/cmd/archgate-image packages them (go-containerregistry).
#
# Reproducible: the same commit gives the same digests on any machine with the same Go
# version. The binaries are built with -trimpath, -buildvcs=false (the VCS stamp would change
# with untracked files) and pinned GOAMD64/GOARM64/GOPPC64 levels, from the operator module
# alone (GOWORK=off: the simulator's replaces do not reach the image); the creation time and
# every file's mtime are the commit time; the CA bundle comes from a Go module pinned in
# operator/go.mod, not from the build machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 GOPPC64=power8
export GOFLAGS="-tags=containers_image_openpgp,containers_image_storage_stub,containers_image_docker_daemon_stub -trimpath -buildvcs=false"

platforms=(${IMAGE_PLATFORMS:-linux/amd64 linux/arm64 linux/ppc64le linux/s390x})
tag=${IMAGE_TAG:-latest}
out=bin/image
work=bin/image-build

source hack/lib.sh
version=${VERSION:-0.0.0-dev}
check_version "$version"
created=0
if git rev-parse --git-dir >/dev/null 2>&1; then
  created=$(git log -1 --format=%ct)
fi
revision=$(archgate_commit)

(cd operator && go build -o "../$work/archgate-image" ./cmd/archgate-image)
args=()
for p in "${platforms[@]}"; do
  os=${p%%/*} arch=${p#*/}
  bin="$work/${os}-${arch}/archgate"
  echo "building archgate for ${p}"
  (cd operator && GOOS=$os GOARCH=$arch go build -ldflags "-s -w $(archgate_ldflags "$version" "$revision")" -o "../$bin" ./cmd/archgate)
  args+=(--binary "${p}=${bin}")
done
"$work/archgate-image" build --out "$out" --tag "$tag" --created "$created" "${args[@]}" \
  --annotation "org.opencontainers.image.revision=${revision}" \
  --annotation "org.opencontainers.image.version=${version}" \
  --annotation "org.opencontainers.image.created=$(date -u -d "@${created}" +%Y-%m-%dT%H:%M:%SZ)" \
  --annotation "org.opencontainers.image.source=https://github.com/archgate/archgate" \
  --annotation "org.opencontainers.image.title=archgate"
# The same layout as one archive, for `ctr images import` (the real-node cluster imports it).
tar -C "$out" --sort=name --mtime=@0 --owner=0 --group=0 -cf "$out.tar" .
