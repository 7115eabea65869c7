#!/usr/bin/env bash
# make fidelity: runs scenarios/fidelity.yaml in the simulator (envtest) and on the real-node
# cluster (started here with the scenario's catalog in its registry, stopped on every exit),
# FIDELITY_PAIRS times each, then `simulator fidelity` puts the pairs side by side under
# reports/fidelity/.
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

# FIDELITY_PAIRS runs in each place, each pair back to back: the machine's speed drifts over
# minutes, so each cluster run is compared with the simulator run just before it. The cluster is
# started for each of its runs and stopped before the next simulator run, which then has the
# machine to itself.
PAIRS=${FIDELITY_PAIRS:-3}
[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || { echo "fidelity: FIDELITY_PAIRS=$PAIRS: want a positive count" >&2; exit 2; }
logs=$(mktemp -d)
trap 'make --no-print-directory cluster-down >/dev/null 2>&1 || true' EXIT
args=()
for ((i = 1; i <= PAIRS; i++)); do
  echo "fidelity: pair $i of $PAIRS: scenarios/$NAME.yaml in the simulator"
  bin/simulator run --scenario "scenarios/$NAME.yaml" --out reports ${SIMFLAGS:-} 2>&1 | tee "$logs/simulator-$i.log"
  sim=$(report_of "$logs/simulator-$i.log")
  args+=(--simulator "$sim")

  echo "fidelity: pair $i of $PAIRS: scenarios/$NAME.yaml on the real-node cluster"
  make --no-print-directory cluster-up CLUSTER_SCENARIOS="$NAME" >"$logs/cluster-up-$i.log" 2>&1 ||
    { tail -20 "$logs/cluster-up-$i.log" >&2; exit 1; }
  make --no-print-directory cluster-scenario NAME="$NAME" 2>&1 | tee "$logs/cluster-$i.log"
  cluster=$(report_of "$logs/cluster-$i.log")
  args+=(--cluster "$cluster")
  make --no-print-directory cluster-down >/dev/null
done

echo "fidelity: side by side"
bin/simulator fidelity "${args[@]}" --out reports
