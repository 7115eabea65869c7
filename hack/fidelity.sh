#!/usr/bin/env bash
# make fidelity: runs scenarios/fidelity.yaml in the simulator (envtest) and on the real-node
# cluster (started here with the scenario's catalog in its registry, stopped on every exit), then
# `simulator fidelity` puts the two reports side by side under reports/fidelity/.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${FIDELITY_SCENARIO:-fidelity}

if hack/cluster.sh status >/dev/null 2>&1; then
  echo "fidelity: a real-node cluster already runs; make cluster-down first (this starts one whose registry serves scenarios/$NAME.yaml)" >&2
  exit 1
fi

# report_of LOG: the JSON report a simulator run wrote, from its "report: PATH" line.
report_of() {
  local path
  path=$(sed -n 's/^report: //p' "$1" | tail -1)
  [[ -n $path && -f $path ]] || { echo "fidelity: no report in $1" >&2; exit 1; }
  echo "$path"
}

logs=$(mktemp -d)
echo "fidelity: 1/3 scenarios/$NAME.yaml in the simulator"
bin/simulator run --scenario "scenarios/$NAME.yaml" --out reports ${SIMFLAGS:-} 2>&1 | tee "$logs/simulator.log"
sim=$(report_of "$logs/simulator.log")

echo "fidelity: 2/3 scenarios/$NAME.yaml on the real-node cluster"
trap 'make --no-print-directory cluster-down' EXIT
make --no-print-directory cluster-up CLUSTER_SCENARIOS="$NAME" >"$logs/cluster-up.log" 2>&1 ||
  { tail -20 "$logs/cluster-up.log" >&2; exit 1; }
make --no-print-directory cluster-scenario NAME="$NAME" 2>&1 | tee "$logs/cluster.log"
cluster=$(report_of "$logs/cluster.log")

echo "fidelity: 3/3 side by side"
bin/simulator fidelity --simulator "$sim" --cluster "$cluster" --out reports
