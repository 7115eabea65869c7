#!/usr/bin/env bash
# make deploy / make undeploy: installs archgate's operator into, or removes it from, the
# cluster of the current kubeconfig; `render` prints the manifests instead (make release).
#
#   OVERLAY  deploy/overlays/<OVERLAY>: kubernetes (default), openshift, cert-manager, monitoring,
#            openshift-monitoring
#   IMG      the archgate image (default ghcr.io/archgate/archgate:latest)
#   KUBECTL  the kubectl to use (default: kubectl on PATH, else one built by hack/kubectl.sh)
#
# delete removes things in the only safe order: the PodPlacementConfigs, then the
# ClusterPodPlacementConfig (the operator unregisters the webhook, releases every gated pod
# and deletes its components), then, once no pod is gated any more, the operator and the CRDs.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

action=${1:?usage: hack/deploy.sh apply|delete|render}
overlay=${OVERLAY:-kubernetes}
img=${IMG:-ghcr.io/archgate/archgate:latest}
placeholder=ghcr.io/archgate/archgate
timeout=${UNDEPLOY_TIMEOUT:-10m}

if [[ ! -d deploy/overlays/$overlay ]]; then
  echo "no overlay deploy/overlays/$overlay (have: $(ls deploy/overlays | tr '\n' ' '))" >&2
  exit 2
fi
# kubectl: only apply and delete need one.
kubectl=${KUBECTL:-}
if [[ -z $kubectl && $action != render ]]; then
  if command -v kubectl >/dev/null 2>&1; then
    kubectl=kubectl
  else
    hack/kubectl.sh
    kubectl=$PWD/bin/k8s/kubectl
  fi
fi

# A throw-away kustomization on top of the overlay sets the image.
mkdir -p .cache
work=$(mktemp -d .cache/deploy.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ $img == *@* ]]; then
  image="  newName: ${img%@*}
  digest: ${img#*@}"
elif [[ ${img##*/} == *:* ]]; then
  image="  newName: ${img%:*}
  newTag: ${img##*:}"
else
  image="  newName: ${img}
  newTag: latest"
fi
cat > "$work/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../deploy/overlays/${overlay}
images:
- name: ${placeholder}
${image}
YAML
render() { (cd simulator && go tool kustomize build "../$work"); }

crd_exists() { $kubectl get crd "$1" >/dev/null 2>&1; }

# preflight refuses to install over another owner of the multiarch.openshift.io API (the
# upstream multiarch tuning operator uses the same CRD names): docs/migration.md.
preflight() {
  local crd owner
  for crd in clusterpodplacementconfigs.multiarch.openshift.io podplacementconfigs.multiarch.openshift.io; do
    crd_exists "$crd" || continue
    owner=$($kubectl get crd "$crd" -o 'jsonpath={.metadata.labels.app\.kubernetes\.io/part-of}')
    if [[ $owner != archgate ]]; then
      echo "CustomResourceDefinition $crd exists and is not archgate's (label app.kubernetes.io/part-of=${owner:-<none>}):" >&2
      echo "another operator, such as the multiarch tuning operator, owns the multiarch.openshift.io API." >&2
      echo "Migrate from it first: docs/migration.md. Nothing was changed." >&2
      exit 1
    fi
  done
}

case $action in
render)
  render
  ;;
apply)
  preflight
  render | $kubectl apply --server-side --field-manager=archgate-deploy -f -
  echo
  echo "archgate's operator is installed (overlay ${overlay}, image ${img})."
  echo "Enable placement with a ClusterPodPlacementConfig, e.g.:"
  echo "  $kubectl apply -f deploy/samples/clusterpodplacementconfig.yaml"
  ;;
delete)
  if crd_exists podplacementconfigs.multiarch.openshift.io; then
    echo "deleting every PodPlacementConfig"
    $kubectl delete podplacementconfigs --all --all-namespaces --ignore-not-found --wait --timeout="$timeout"
  fi
  if crd_exists clusterpodplacementconfigs.multiarch.openshift.io; then
    echo "deleting the ClusterPodPlacementConfig; the operator releases the gated pods and removes its components"
    $kubectl delete clusterpodplacementconfigs --all --ignore-not-found --wait --timeout="$timeout"
  fi
  left=$($kubectl get pods --all-namespaces -l multiarch.openshift.io/scheduling-gate=gated -o name | wc -l)
  if (( left > 0 )); then
    echo "$left pods still carry archgate's scheduling gate; the operator is left in place." >&2
    echo "Release them (archgate ungate --all-namespaces --dry-run=false) and run make undeploy again." >&2
    exit 1
  fi
  echo "no gated pods left; deleting the operator and the CRDs"
  render | $kubectl delete --ignore-not-found --wait --timeout="$timeout" -f -
  ;;
*)
  echo "usage: hack/deploy.sh apply|delete|render" >&2
  exit 2
  ;;
esac
