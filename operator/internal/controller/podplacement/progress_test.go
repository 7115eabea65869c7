/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package podplacement

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// TestStalled checks the progress check: a controller is stalled only when a pod it must
// release has kept the gate past maxGateAge plus the grace and no pod was released for the
// grace; a backlog being released, a young pod, or a pod held by a namespace's local gate is
// not a stall.
func TestStalled(t *testing.T) {
	const image = "reg.example/arm:1"
	over := time.Minute + StallGrace + time.Second
	for name, tc := range map[string]struct {
		pod           *objects.PodBuilder
		sinceRelease  time.Duration
		wantStalledBy string // "": not stalled
	}{
		"nothing gated": {sinceRelease: time.Hour},
		"a young gated pod, nothing released for long": {
			pod: gatedPod("young", image).WithCreationTimestamp(ago(time.Minute)), sinceRelease: time.Hour,
		},
		"an over-age pod while pods are being released": {
			pod: gatedPod("old", image).WithCreationTimestamp(ago(over)), sinceRelease: StallGrace - time.Second,
		},
		"an over-age pod and nothing released": {
			pod: gatedPod("old", image).WithCreationTimestamp(ago(over)), sinceRelease: StallGrace + time.Second, wantStalledBy: "team/old",
		},
		"an over-age pod held by its namespace's local gate": {
			pod: gatedPod("local", image).WithCreationTimestamp(ago(over)).WithLabels(v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated,
				v1beta1.LabelLocalSchedulingGate, v1beta1.LabelValueGated),
			sinceRelease: time.Hour,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var objs []client.Object
			if tc.pod != nil {
				objs = append(objs, tc.pod.Build())
			}
			h := newHarness(t, Options{MaxGateAge: time.Minute}, nil, objs...)
			h.r.lastRelease.Store(testEpoch.Add(-tc.sinceRelease).UnixNano())
			err := h.r.Stalled(context.Background())
			switch {
			case tc.wantStalledBy == "" && err != nil:
				t.Errorf("stalled: %v", err)
			case tc.wantStalledBy != "" && (err == nil || !strings.Contains(err.Error(), tc.wantStalledBy)):
				t.Errorf("Stalled = %v, want a stall naming %s", err, tc.wantStalledBy)
			}
		})
	}
}
