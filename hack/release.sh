#!/usr/bin/env bash
# make release VERSION=x.y.z: every artifact of a release, into bin/release/. Reproducible: the
# same commit and VERSION give the same bytes on any machine with the same Go (the image's
# times are the commit's, the binaries are built with -trimpath and without a VCS stamp).
#
#   archgate-<os>-<arch>     the archgate binary: the CLI (explain, ungate, version; rename it
#                            kubectl-archgate to use it as a kubectl plugin) and the servers
#   archgate-image.oci.tar   the multi-architecture image index, an OCI layout archive tagged
#                            VERSION (push it: make push IMG=<repo>:<VERSION>)
#   install.yaml             everything `kubectl apply -f` needs: namespace, CRDs, RBAC, the
#                            operator pinned to IMAGE_REPO@<index digest>, its webhooks
#   crds.yaml                the CustomResourceDefinitions alone
#   archgate-VERSION.tgz     the Helm chart, its image pinned by the same digest
#   archgate-bundle-VERSION.tar.gz  the OLM bundle (manifests/, metadata/, bundle.Dockerfile),
#                            its CSV archgate.vVERSION naming the image by the same digest
#   SHA256SUMS               the checksums of the files above
#
#   VERSION          semantic version without a leading v (required)
#   IMAGE_REPO       where the image will be pushed (default ghcr.io/archgate/archgate)
#   RELEASE_DIR      where the artifacts go (default bin/release)
#   IMAGE_PLATFORMS  the image's platforms (default linux/amd64 linux/arm64 linux/ppc64le linux/s390x)
#   CLI_PLATFORMS    further platforms of the binary alone (default darwin/amd64 darwin/arm64)
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib.sh
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
version=${VERSION:?usage: make release VERSION=x.y.z}
check_version "$version"
repo=${IMAGE_REPO:-ghcr.io/archgate/archgate}
out=${RELEASE_DIR:-bin/release}
rm -rf "$out"
mkdir -p "$out"

# The image, and from it the digest install.yaml pins. Its linux binaries are the release's.
VERSION=$version IMAGE_TAG=$version hack/image.sh
cp bin/image.tar "$out/archgate-image.oci.tar"
digest=$(bin/image-build/archgate-image digest --layout bin/image --tag "$version")
for p in ${IMAGE_PLATFORMS:-linux/amd64 linux/arm64 linux/ppc64le linux/s390x}; do
  cp "bin/image-build/${p%%/*}-${p#*/}/archgate" "$out/archgate-${p%%/*}-${p#*/}"
done
# Workstations: the CLI for macOS as well.
commit=$(archgate_commit)
for p in ${CLI_PLATFORMS-darwin/amd64 darwin/arm64}; do
  echo "building archgate for $p"
  (cd operator && GOOS=${p%/*} GOARCH=${p#*/} GOFLAGS="-tags=containers_image_openpgp,containers_image_storage_stub,containers_image_docker_daemon_stub -trimpath -buildvcs=false" \
    go build -ldflags "-s -w $(archgate_ldflags "$version" "$commit")" -o "../$out/archgate-${p%/*}-${p#*/}" ./cmd/archgate)
done

OVERLAY=kubernetes IMG="${repo}@${digest}" hack/deploy.sh render > "$out/install.yaml"
(cd simulator && go tool kustomize build ../operator/config/crd) > "$out/crds.yaml"

# The Helm chart, versioned as the release and its image pinned by the same digest.
chart=$(mktemp -d)
trap 'rm -rf "$chart"' EXIT
cp -r deploy/helm/archgate "$chart/"
sed -i -e "s|^  repository: .*|  repository: ${repo}|" -e "s|^  digest: \"\"|  digest: \"${digest}\"|" "$chart/archgate/values.yaml"
grep -q "digest: \"${digest}\"" "$chart/archgate/values.yaml" || { echo "could not pin the chart's image digest" >&2; exit 1; }
sed -i -e "s|^version: .*|version: ${version}|" -e "s|^appVersion: .*|appVersion: \"${version}\"|" "$chart/archgate/Chart.yaml"
# What `helm package` writes, but with the commit's time in every header (helm stamps the current
# time, so its archive would differ on every run).
created=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tar -C "$chart" --sort=name --mtime="@${created}" --owner=0 --group=0 --numeric-owner -cf - archgate | gzip -n -9 > "$out/archgate-${version}.tgz"
bin/helm lint --strict "$out/archgate-${version}.tgz" >/dev/null

# The OLM bundle of this release, from the same overlay as bundle/ (make bundle), packed like the chart.
(cd hack/bundle && GOFLAGS= VERSION="$version" IMG="${repo}@${digest}" BUNDLE_DIR="$chart/bundle" go run ./gen generate "$OLDPWD")
(cd hack/bundle && GOFLAGS= BUNDLE_DIR="$chart/bundle" go test -count=1 -run '^TestCommittedBundleValidates$' ./gen/ >/dev/null)
tar -C "$chart/bundle" --sort=name --mtime="@${created}" --owner=0 --group=0 --numeric-owner -cf - . | gzip -n -9 > "$out/archgate-bundle-${version}.tar.gz"

(cd "$out" && sha256sum -- * > SHA256SUMS)
echo
echo "archgate ${version} (commit ${commit}), image ${repo}:${version} = ${repo}@${digest}:"
(cd "$out" && for f in *; do printf '  %-28s %10s bytes  sha256:%s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)"; done)
