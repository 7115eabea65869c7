# Shared by the build scripts in hack/ (sourced).

# kube_ldflags VERSION: linker flags stamping a Kubernetes binary built from module sources with
# its version (without them it reports v0.0.0-master), stripped.
kube_ldflags() {
  local minor=${1#v1.}
  minor=${minor%%.*}
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
}

# archgate_commit: the commit the work tree is at, with "-dirty" when operator/ or
# fakeregistry/ (what the binary is built from) have changes; "unknown" outside git.
archgate_commit() {
  if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo unknown
    return
  fi
  local rev
  rev=$(git rev-parse HEAD)
  if [[ -n $(git status --porcelain -- operator fakeregistry) ]]; then rev+="-dirty"; fi
  echo "$rev"
}

# archgate_ldflags VERSION COMMIT: linker flags stamping archgate's binary with its release
# version and commit (`archgate version`, archgate_build_info).
archgate_ldflags() {
  local pkg=github.com/archgate/archgate/operator/internal/version
  echo "-X ${pkg}.version=$1 -X ${pkg}.commit=$2"
}

# check_version VERSION: fails unless VERSION is a semantic version without a leading v
# (0.1.0, 1.2.3-rc.1): it becomes an image tag, a chart version and a bundle version.
check_version() {
  if [[ ! $1 =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
    echo "VERSION=$1: want a semantic version without a leading v, such as 0.1.0 or 1.2.0-rc.1" >&2
    return 1
  fi
}
