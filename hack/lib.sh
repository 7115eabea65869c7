# Shared by the build scripts in hack/ (sourced).

# kube_ldflags VERSION: linker flags stamping a Kubernetes binary built from module sources with
# its version (without them it reports v0.0.0-master), stripped.
kube_ldflags() {
  local minor=${1#v1.}
  minor=${minor%%.*}
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
}
