package scenario

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
	"github.com/archgate/archgate/operator/api/v1beta1"
)

// valid is a minimal scenario; tests break one thing at a time.
const valid = `name: t
seed: 1
nodes:
  - {arch: amd64, count: 2}
  - {arch: arm64, count: 2}
registry:
  catalog:
    repositories:
      - name: library/app
        images:
          - tags: [v1]
            format: oci-index
            platforms: [linux/amd64, linux/arm64]
operator:
  enabled: true
workload:
  pods: 10
  arrival: {mode: rate, rate: 5}
expectations:
  - check: gateHold.p99 < 200ms
    source: test
`

func TestParseValid(t *testing.T) {
	l, err := Parse("ok.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	s := l.Scenario
	if got, want := s.Deadline.D(), DefaultDeadline; got != want {
		t.Errorf("deadline default = %v, want %v", got, want)
	}
	if got := s.Nodes[0].Allocatable.Pods; got != 110 {
		t.Errorf("allocatable pods default = %d, want 110", got)
	}
	if got := *s.Workload.Containers; got != (IntRange{Min: 1, Max: 1}) {
		t.Errorf("containers default = %v", got)
	}
	if got := s.Workload.Arrival.Concurrency; got != DefaultConcurrency {
		t.Errorf("concurrency default = %d", got)
	}
	if len(l.Checks) != 1 || l.Checks[0].Value != 0.2 || l.Checks[0].Op != OpLess {
		t.Errorf("checks = %+v", l.Checks)
	}
	if len(l.Catalog.Images()) != 1 {
		t.Errorf("catalog images = %d, want 1", len(l.Catalog.Images()))
	}
}

// TestParseErrors asserts that every kind of bad input names the file, the
// line and the field path.
func TestParseErrors(t *testing.T) {
	const file = "bad.yaml"
	tests := map[string]struct {
		// edit turns the valid scenario into the bad one.
		old, new string
		want     []strictyaml.FieldError // Value is not compared when empty
	}{
		"unknown top-level field": {
			old: "seed: 1\n", new: "seed: 1\nsede: 2\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "sede", Reason: `unknown field (did you mean "seed"?)`}},
		},
		"unknown nested field": {
			old: "  arrival: {mode: rate, rate: 5}", new: "  arrival: {mode: rate, rate: 5, burst: 3}",
			want: []strictyaml.FieldError{{Line: 18, Path: "workload.arrival.burst", Reason: "unknown field"}},
		},
		"unknown field in a list item": {
			old: "  - {arch: arm64, count: 2}", new: "  - {arch: arm64, count: 2, zone: a}",
			want: []strictyaml.FieldError{{Line: 5, Path: "nodes[1].zone", Reason: "unknown field"}},
		},
		"unknown field inside the operator's API types": {
			old: "  enabled: true\n", new: "  enabled: true\n  clusterConfig:\n    plugins:\n      nodeAffinityScorin: {}\n",
			want: []strictyaml.FieldError{{Line: 18, Path: "operator.clusterConfig.plugins.nodeAffinityScorin", Reason: `unknown field (did you mean "nodeAffinityScoring"?)`}},
		},
		"unknown field in the catalog": {
			old: "            format: oci-index", new: "            format: oci-index\n            platfroms: [linux/amd64]",
			want: []strictyaml.FieldError{{Line: 13, Path: "registry.catalog.repositories[0].images[0].platfroms", Reason: `unknown field (did you mean "platforms"?)`}},
		},
		"wrong type": {
			old: "  pods: 10", new: "  pods: many",
			want: []strictyaml.FieldError{{Line: 17, Path: "workload.pods", Value: `"many"`, Reason: "wrong type, want an integer"}},
		},
		"number for a tag in the catalog": {
			old: "tags: [v1]", new: "tags: [v1, 1.10, true]",
			want: []strictyaml.FieldError{
				{Line: 11, Path: "registry.catalog.repositories[0].images[0].tags[1]", Value: "1.10", Reason: `wrong type, want a string: YAML reads 1.10 as a float; quote it: "1.10"`},
				{Line: 11, Path: "registry.catalog.repositories[0].images[0].tags[2]", Value: "true", Reason: `wrong type, want a string: YAML reads true as a boolean; quote it: "true"`},
			},
		},
		"number for a string outside the catalog": {
			old: "  arrival: {mode: rate, rate: 5}", new: "  arrival: {mode: 7, rate: 5}",
			want: []strictyaml.FieldError{{Line: 18, Path: "workload.arrival.mode", Value: "7", Reason: `wrong type, want a string: YAML reads 7 as an integer; quote it: "7"`}},
		},
		"bad duration": {
			old: "seed: 1\n", new: "seed: 1\ndeadline: 10 minutes\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "deadline", Value: `"10 minutes"`, Reason: "want a duration such as 200ms or 1m30s"}},
		},
		"bare number for a duration": {
			old: "seed: 1\n", new: "seed: 1\ndeadline: 600\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "deadline", Value: "600", Reason: "want a duration such as 200ms or 1m30s"}},
		},
		"bad quantity": {
			old: "  - {arch: amd64, count: 2}", new: "  - {arch: amd64, count: 2, allocatable: {cpu: lots}}",
			want: []strictyaml.FieldError{{Line: 4, Path: "nodes[0].allocatable.cpu", Value: `"lots"`, Reason: "want a quantity such as 500m, 2 or 128Gi"}},
		},
		"bad value": {
			old: "  - {arch: arm64, count: 2}", new: "  - {arch: arm, count: 2}",
			want: []strictyaml.FieldError{{Line: 5, Path: "nodes[1].arch", Value: `"arm"`, Reason: "want one of amd64, arm64, ppc64le, s390x"}},
		},
		"negative count and share out of range": {
			old: "  pods: 10", new: "  pods: 0\n  pullSecretShare: 1.5",
			want: []strictyaml.FieldError{
				{Line: 17, Path: "workload.pods", Value: "0", Reason: "must be at least 1"},
				{Line: 18, Path: "workload.pullSecretShare", Value: "1.5", Reason: "must be within [0, 1]"},
				{Line: 18, Path: "workload.pullSecretShare", Value: "1.5", Reason: "needs registry.auth (without auth there is nothing to authenticate)"},
			},
		},
		"attacker out of range": {
			old: "seed: 1\n", new: "seed: 1\nattacker:\n  pods: 0\n  rate: 0\n  attacks:\n    - {weight: 0, images: lost, containers: 2000, annotationBytes: 300000}\n  tarpit: {size: 1Ki}\n",
			want: []strictyaml.FieldError{
				{Line: 4, Path: "attacker.pods", Value: "0", Reason: "must be at least 1"},
				{Line: 5, Path: "attacker.rate", Value: "0", Reason: "must be greater than zero (pods per second)"},
				{Line: 7, Path: "attacker.attacks[0].weight", Value: "0", Reason: "must be greater than zero"},
				{Line: 7, Path: "attacker.attacks[0].images", Value: `"lost"`, Reason: "want one of hang, tarpit, missing, catalog"},
				{Line: 7, Path: "attacker.attacks[0].containers", Value: "2000", Reason: "must be within [1, 1000]"},
				{Line: 7, Path: "attacker.attacks[0].annotationBytes", Value: "300000", Reason: "must be within [0, 258048] (the apiserver refuses more than 256 KiB of annotations)"},
				{Line: 8, Path: "attacker.tarpit", Reason: "only applies with an attack of images: tarpit"},
			},
		},
		"headroom out of range": {
			old: "seed: 1\n", new: "seed: 1\nheadroom: {maxUtilization: 1.5, maxSpeedChange: 1, maxHarnessChange: -0.1}\n",
			want: []strictyaml.FieldError{
				{Line: 3, Path: "headroom.maxUtilization", Value: "1.5", Reason: "must be within (0, 1]: a share of the machine's CPU, all cores"},
				{Line: 3, Path: "headroom.maxSpeedChange", Value: "1", Reason: "must be within (0, 1): a relative difference of calibration between passes"},
				{Line: 3, Path: "headroom.maxHarnessChange", Value: "-0.1", Reason: "must be within (0, 1): a relative difference of the harness's CPU per pod between passes"},
			},
		},
		"headroom that bounds nothing": {
			old: "seed: 1\n", new: "seed: 1\nheadroom: {}\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "headroom", Value: "{}", Reason: "sets none of maxUtilization, maxSpeedChange and maxHarnessChange"}},
		},
		"arrival field for another mode": {
			old: "  arrival: {mode: rate, rate: 5}", new: "  arrival: {mode: burst, rate: 5}",
			want: []strictyaml.FieldError{{Line: 18, Path: "workload.arrival.rate", Value: "5", Reason: "only applies to mode rate"}},
		},
		"catalog error mapped into the scenario": {
			old: "            format: oci-index", new: "            format: oci-idx",
			want: []strictyaml.FieldError{{Line: 12, Path: "registry.catalog.repositories[0].images[0].format", Value: `"oci-idx"`}},
		},
		"duplicate key": {
			old: "seed: 1\n", new: "seed: 1\nseed: 2\n",
			want: []strictyaml.FieldError{{Line: 3, Reason: `invalid YAML: yaml: unmarshal errors: line 3: key "seed" already set in map`}},
		},
		"expectation syntax": {
			old: "  - check: gateHold.p99 < 200ms", new: "  - check: gateHold.p99 below 200ms",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].check", Value: `"gateHold.p99 below 200ms"`,
				Reason: `want "<metric> <op> <value>" with op one of < <= > >= == !=`}},
		},
		"expectation unknown metric": {
			old: "  - check: gateHold.p99 < 200ms", new: "  - check: gatehold.p99 < 200ms",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].check", Value: `"gatehold.p99 < 200ms"`,
				Reason: `unknown metric "gatehold.p99" (did you mean gateHold.p99?)`}},
		},
		"expectation value of the wrong unit": {
			old: "  - check: gateHold.p99 < 200ms", new: "  - check: gateHold.p99 < 200",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].check", Value: `"gateHold.p99 < 200"`,
				Reason: `metric gateHold.p99: value "200": want a duration such as 200ms`}},
		},
		"expectation without source": {
			old: "    source: test\n", new: "",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].source", Reason: "required: say where the threshold comes from (a measurement, an SLO, a design figure)"}},
		},
		"expectation goal looser than its check": {
			old: "    source: test\n", new: "    source: test\n    goal: 300ms\n",
			want: []strictyaml.FieldError{{Line: 22, Path: "expectations[0].goal", Value: `"300ms"`, Reason: "goal 300ms is not stricter than the check's 200.0ms"}},
		},
		"expectation goal of the wrong unit": {
			old: "    source: test\n", new: "    source: test\n    goal: \"5\"\n",
			want: []strictyaml.FieldError{{Line: 22, Path: "expectations[0].goal", Value: `"5"`, Reason: `value "5": want a duration such as 200ms`}},
		},
		"expectation needing a baseline": {
			old: "  - check: gateHold.p99 < 200ms", new: "  - check: ratio.throughput >= 0.9",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].check", Value: `"ratio.throughput >= 0.9"`, Reason: "metric ratio.throughput needs baseline: true"}},
		},
		"handwritten pass via webhook without the pass": {
			old: "seed: 1\n", new: "seed: 1\nhandwrittenViaWebhook: true\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "handwrittenViaWebhook",
				Reason: "needs handwrittenBaseline: true (it changes how that pass adds the affinity)"}},
		},
		"handwritten pass via policy without the pass": {
			old: "seed: 1\n", new: "seed: 1\nhandwrittenViaPolicy: true\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "handwrittenViaPolicy",
				Reason: "needs handwrittenBaseline: true (it changes how that pass adds the affinity)"}},
		},
		"handwritten pass via policy and webhook": {
			old: "seed: 1\n", new: "seed: 1\nhandwrittenBaseline: true\nhandwrittenViaWebhook: true\nhandwrittenViaPolicy: true\n",
			want: []strictyaml.FieldError{{Line: 5, Path: "handwrittenViaPolicy",
				Reason: "excludes handwrittenViaWebhook: the handwritten pass has one floor"}},
		},
		"floor pass of an unknown kind": {
			old: "seed: 1\n", new: "seed: 1\nfloorBaseline: grpc\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "floorBaseline", Value: `"grpc"`,
				Reason: `must be one of ["webhook" "policy" "policy-placement"]`}},
		},
		"floor pass beside a handwritten pass through a floor": {
			old: "seed: 1\n", new: "seed: 1\nhandwrittenBaseline: true\nhandwrittenViaPolicy: true\nfloorBaseline: policy\n",
			want: []strictyaml.FieldError{{Line: 5, Path: "floorBaseline", Value: `"policy"`,
				Reason: "excludes handwrittenViaWebhook and handwrittenViaPolicy: the floor runs as its own pass beside the handwritten one"}},
		},
		"floor gate without a floor pass": {
			old: "seed: 1\n", new: "seed: 1\nfloorGate: true\n",
			want: []strictyaml.FieldError{{Line: 3, Path: "floorGate", Value: "true",
				Reason: `needs floorBaseline (one of ["webhook" "policy" "policy-placement"]): it gates in the floor pass`}},
		},
		"expectation needing a floor pass": {
			old: "  - check: gateHold.p99 < 200ms", new: "  - check: floorRatio.create.p99 <= 2",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].check", Value: `"floorRatio.create.p99 <= 2"`,
				Reason: "metric floorRatio.create.p99 needs floorBaseline"}},
		},
		"cluster defaults without the controller manager": {
			old: "seed: 1\n", new: "seed: 1\ncontrolPlane:\n  clusterDefaults: true\n",
			want: []strictyaml.FieldError{{Line: 4, Path: "controlPlane.clusterDefaults",
				Reason: "needs controlPlane.controllerManager: true (its serviceaccount controller creates the ServiceAccounts that admission then requires)"}},
		},
		"expectation needing a handwritten pass": {
			old: "  - check: gateHold.p99 < 200ms", new: "  - check: handwrittenRatio.throughput >= 0.9",
			want: []strictyaml.FieldError{{Line: 20, Path: "expectations[0].check", Value: `"handwrittenRatio.throughput >= 0.9"`,
				Reason: "metric handwrittenRatio.throughput needs handwrittenBaseline: true"}},
		},
		"timeline with two actions": {
			old: "expectations:", new: "timeline:\n  - at: 5s\n    webhookDown: {duration: 1s}\n    clusterConfigDeleted: {}\nexpectations:",
			want: []strictyaml.FieldError{{Line: 20, Path: "timeline[0]", Reason: "want exactly one action of registryOutage, registrySlowdown, registryErrors, controllerRestart, webhookDown, clusterConfigDeleted, controllerDown, clusterConfigChanged, imagesDeleted"}},
		},
		"images deleted without a count": {
			old: "expectations:", new: "timeline:\n  - at: 5s\n    imagesDeleted: {prefix: apps/, count: 0}\nexpectations:",
			want: []strictyaml.FieldError{{Line: 21, Path: "timeline[0].imagesDeleted.count", Value: "0", Reason: "must be at least 1"}},
		},
		"more images deleted than the catalog holds": {
			old: "expectations:", new: "timeline:\n  - at: 5s\n    imagesDeleted: {prefix: nowhere/, count: 1}\nexpectations:",
			want: []strictyaml.FieldError{{Line: 21, Path: "timeline[0].imagesDeleted.count", Value: "1", Reason: `the catalog holds 0 images whose repository starts with "nowhere/"`}},
		},
		"controller restart of an unknown mode": {
			old: "  enabled: true\n", new: "  enabled: true\n  mode: direct\ntimeline:\n  - at: 5s\n    controllerRestart: {mode: sigstop}\n",
			want: []strictyaml.FieldError{{Line: 19, Path: "timeline[0].controllerRestart.mode", Value: `"sigstop"`, Reason: "want graceful or crash"}},
		},
		"three controller replicas": {
			old: "  enabled: true\n", new: "  enabled: true\n  mode: direct\n  controllerReplicas: 3\n",
			want: []strictyaml.FieldError{{Line: 17, Path: "operator.controllerReplicas", Value: "3", Reason: "want 1 or 2 (2: a leader and a warm standby)"}},
		},
		"unknown operator mode": {
			old: "  enabled: true\n", new: "  enabled: true\n  mode: inprocess\n",
			want: []strictyaml.FieldError{{Line: 16, Path: "operator.mode", Value: `"inprocess"`, Reason: "want operator or direct"}},
		},
		"direct-only settings in operator mode": {
			old: "  enabled: true\n", new: "  enabled: true\n  workers: 8\n  retryBaseDelay: 1s\n",
			want: []strictyaml.FieldError{
				{Line: 16, Path: "operator.workers", Value: "8", Reason: "not a setting a cluster can give the components (no ClusterPodPlacementConfig field): only with operator.mode direct"},
				{Line: 17, Path: "operator.retryBaseDelay", Value: `"1s"`, Reason: "not a setting a cluster can give the components (no ClusterPodPlacementConfig field): only with operator.mode direct"},
			},
		},
		"local placement in operator mode": {
			old: "  enabled: true\n", new: "  enabled: true\n  clusterConfig: {localPlacement: Enabled}\n",
			want: []strictyaml.FieldError{{Line: 16, Path: "operator.clusterConfig.localPlacement", Value: `"Enabled"`,
				Reason: "the simulator's kubelet runs the Deployments of the operator's namespace only, not the local components the operator renders in workload namespaces: only with operator.mode direct"}},
		},
		"placement rules, which the handwritten pass cannot apply": {
			old: "  enabled: true\n", new: "  enabled: true\n  clusterConfig: {placementRules: [{name: ml, expression: 'true', requiredArchitectures: [arm64]}]}\n",
			want: []strictyaml.FieldError{{Line: 16, Path: "operator.clusterConfig.placementRules",
				Reason: "not supported by the simulator yet: the handwritten pass does not evaluate placement rules"}},
		},
		"controller down and fail-open grace in direct mode": {
			old: "  enabled: true\n", new: "  enabled: true\n  mode: direct\n  failOpenGracePeriod: 5s\ntimeline:\n  - at: 5s\n    controllerDown: {duration: 10s}\n",
			want: []strictyaml.FieldError{
				{Line: 17, Path: "operator.failOpenGracePeriod", Value: `"5s"`, Reason: "needs operator.mode operator (it is the operator's flag)"},
				{Line: 20, Path: "timeline[0].controllerDown", Reason: "needs operator.mode operator (the operator's Deployment is what goes down)"},
			},
		},
		"overlapping registry windows": {
			old: "expectations:", new: "timeline:\n  - at: 5s\n    registryOutage: {duration: 10s}\n  - at: 8s\n    registrySlowdown: {duration: 1s, latency: {fixed: 1s}}\nexpectations:",
			want: []strictyaml.FieldError{{Line: 22, Path: "timeline[1].at", Value: `"8s"`, Reason: "overlaps timeline[0] on the registry: windows of one component must not overlap"}},
		},
		"latency with two forms": {
			old: "registry:\n", new: "registry:\n  latency:\n    manifest_get: {fixed: 1ms, p50: 1ms, p99: 5ms}\n",
			want: []strictyaml.FieldError{{Line: 8, Path: "registry.latency.manifest_get", Reason: "want exactly one of fixed, min+max (uniform) or p50+p99 (log-normal)"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(valid, tc.old) {
				t.Fatalf("test edit %q not found in the valid scenario", tc.old)
			}
			_, err := Parse(file, []byte(strings.Replace(valid, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatal("Parse succeeded, want errors")
			}
			var got []strictyaml.FieldError
			for _, fe := range strictyaml.FieldErrors(err) {
				e := *fe
				e.Column = 0
				got = append(got, e)
			}
			var want []strictyaml.FieldError
			for _, w := range tc.want {
				w.File = file
				want = append(want, w)
			}
			for i := range want {
				if i < len(got) {
					if want[i].Value == "" {
						got[i].Value = ""
					}
					if want[i].Reason == "" {
						got[i].Reason = ""
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nmessage: %v", diff, err)
			}
			// The message a person reads names file, line and field.
			msg := err.Error()
			if w := want[0]; !strings.Contains(msg, file+":") || (w.Path != "" && !strings.Contains(msg, w.Path)) {
				t.Errorf("message %q lacks the file or the field path", msg)
			}
			if w := want[0]; w.Line > 0 && !strings.Contains(msg, file+":"+strconv.Itoa(w.Line)+":") {
				t.Errorf("message %q lacks the line %d", msg, w.Line)
			}
		})
	}
}

func TestParseCheck(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    float64
		wantOp  Op
		wantErr string
	}{
		"duration":         {in: "gateHold.p99 < 200ms", want: 0.2, wantOp: OpLess},
		"count":            {in: "misplacedPods == 0", want: 0, wantOp: OpEqual},
		"percentage":       {in: "cacheHitRate >= 99%", want: 0.99, wantOp: OpGreaterEqual},
		"ratio":            {in: "cacheHitRate >= 0.99", want: 0.99, wantOp: OpGreaterEqual},
		"bytes":            {in: "peakRSSAll < 3Gi", want: 3 << 30, wantOp: OpLess},
		"rate":             {in: "throughput>=90", want: 90, wantOp: OpGreaterEqual},
		"baseline ratio":   {in: "ratio.throughput >= 0.8", want: 0.8, wantOp: OpGreaterEqual},
		"fractional count": {in: "misplacedPods < 0.5", wantErr: `metric misplacedPods: value "0.5": want a whole number`},
		"no operator":      {in: "misplacedPods 0", wantErr: "want"},
		"unknown metric":   {in: "latency.p99 < 1s", wantErr: `unknown metric "latency.p99"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := ParseCheck(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Value != tc.want || c.Op != tc.wantOp {
				t.Errorf("got %v %v, want %v %v", c.Op, c.Value, tc.wantOp, tc.want)
			}
		})
	}
}

// TestParseFormattedReadsFormatValue: what FormatValue writes for people,
// ParseFormatted reads back (to the precision written).
func TestParseFormattedReadsFormatValue(t *testing.T) {
	for name, tc := range map[string]struct {
		unit Unit
		in   float64
		want float64
	}{
		"microseconds": {unit: UnitDuration, in: 0.000412, want: 0.000412},
		"milliseconds": {unit: UnitDuration, in: 0.02384, want: 0.0238},
		"seconds":      {unit: UnitDuration, in: 12.34, want: 12.3},
		"ratio":        {unit: UnitRatio, in: 0.60243, want: 0.6024},
		"gibibytes":    {unit: UnitBytes, in: 2.21 * (1 << 30), want: 2.21 * (1 << 30)},
		"mebibytes":    {unit: UnitBytes, in: 148 << 20, want: 148 << 20},
		"rate":         {unit: UnitRate, in: 49.96, want: 50},
		"factor":       {unit: UnitFactor, in: 1.664, want: 1.66},
		"count":        {unit: UnitCount, in: 9373, want: 9373},
	} {
		t.Run(name, func(t *testing.T) {
			text := FormatValue(tc.unit, tc.in)
			got, err := ParseFormatted(tc.unit, text)
			if err != nil {
				t.Fatalf("ParseFormatted(%q): %v", text, err)
			}
			if math.Abs(got-tc.want) > 1e-9*math.Max(1, tc.want) {
				t.Errorf("ParseFormatted(%q) = %v, want %v", text, got, tc.want)
			}
		})
	}
}

// TestShippedScenarios validates every scenario in scenarios/.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("../../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			l, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(filepath.Base(f), ".yaml"); l.Scenario.Name != want {
				t.Errorf("name %q, want the file name %q (reports and make scenario NAME= rely on it)", l.Scenario.Name, want)
			}
			if len(l.Checks) == 0 {
				t.Error("no expectations: a scenario must say what has to hold")
			}
			// Every spec the operator is given reaches the simulated registries, which listen
			// on loopback: one without the simulated networks gets the API's default, which
			// blocks loopback, and every inspection then fails as blocked.
			specs := map[string]*v1beta1.ClusterPodPlacementConfigSpec{"operator.clusterConfig": &l.Scenario.Operator.ClusterConfig}
			for i, ev := range l.Scenario.Timeline {
				if ev.ClusterConfigChanged != nil {
					specs[strictyaml.IndexPath("timeline", i)+".clusterConfigChanged.spec"] = &ev.ClusterConfigChanged.Spec
				}
			}
			for path, spec := range specs {
				if ii := spec.ImageInspection; ii == nil || len(ii.BlockedNetworks) == 0 {
					t.Errorf("%s: no blockedNetworks after validation: the API's default blocks the simulated registries", path)
				}
			}
		})
	}
}

// TestQuietCounterparts checks that a scenario named <name>-quiet is <name> without its
// attacker: the same cluster, registry, operator and workload, so that the attacked tenants'
// figures in one compare with the other's.
func TestQuietCounterparts(t *testing.T) {
	files, err := filepath.Glob("../../../scenarios/*-quiet.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no quiet scenarios found: %v", err)
	}
	for _, quiet := range files {
		t.Run(filepath.Base(quiet), func(t *testing.T) {
			q, err := Load(quiet)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Load(strings.TrimSuffix(quiet, "-quiet.yaml") + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			if a.Scenario.Attacker == nil || q.Scenario.Attacker != nil {
				t.Fatalf("attacker in %s: %v, in its quiet counterpart: %v; want one and none", a.Scenario.Name, a.Scenario.Attacker != nil, q.Scenario.Attacker != nil)
			}
			// Through JSON: the spec holds quantities, which cmp cannot look into.
			strip := func(s Scenario) map[string]any {
				s.Name, s.Description, s.Attacker, s.Expectations = "", "", nil, nil
				data, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				var out map[string]any
				if err := json.Unmarshal(data, &out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			if diff := cmp.Diff(strip(*a.Scenario), strip(*q.Scenario)); diff != "" {
				t.Errorf("%s and its quiet counterpart differ beyond the attacker (-attacked +quiet):\n%s", a.Scenario.Name, diff)
			}
		})
	}
}
