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

package v1alpha1_test

import (
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	"github.com/archgate/archgate/operator/api/v1alpha1"
	"github.com/archgate/archgate/operator/api/v1beta1"
)

// viaJSON decodes the JSON of in into out, as the apiserver does when it serves an object
// stored as one version to a client of another with conversion strategy None.
func viaJSON(t *testing.T, in, out any) {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("encoding %T: %v", in, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %T into %T: %v", in, out, err)
	}
}

// TestRoundTrip: v1beta1 → v1alpha1 → v1beta1 keeps every field of randomly filled objects,
// and v1alpha1 → v1beta1 → v1alpha1 likewise. The reference is the object's own JSON round
// trip, so types JSON itself normalises (times to seconds) do not count as losses.
func TestRoundTrip(t *testing.T) {
	tests := map[string]struct {
		seed int64
		// nilChance makes pointers nil half the time, so absent optional fields are covered too.
		nilChance float64
	}{
		"every field set":    {seed: 1, nilChance: 0},
		"some fields set":    {seed: 2, nilChance: 0.5},
		"other fields set":   {seed: 3, nilChance: 0.5},
		"few fields set":     {seed: 4, nilChance: 0.9},
		"every field, again": {seed: 5, nilChance: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			filler := randfill.New().RandSource(rand.NewSource(tc.seed)).NilChance(tc.nilChance).
				NumElements(1, 3)

			// ObjectMeta is the apiserver's and is never converted; random managedFields are
			// not even valid JSON.
			beta := &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
			filler.Fill(&beta.Spec)
			filler.Fill(&beta.Status)
			if tc.nilChance == 0 && beta.Spec.Plugins == nil {
				t.Fatal("the filler left spec.plugins unset: the v1beta1-only fields are not exercised")
			}
			wantBeta := &v1beta1.ClusterPodPlacementConfig{}
			viaJSON(t, beta, wantBeta)
			alpha := &v1alpha1.ClusterPodPlacementConfig{}
			viaJSON(t, beta, alpha)
			gotBeta := &v1beta1.ClusterPodPlacementConfig{}
			viaJSON(t, alpha, gotBeta)
			if diff := cmp.Diff(wantBeta, gotBeta); diff != "" {
				t.Errorf("v1beta1 → v1alpha1 → v1beta1 changed the object (-want +got):\n%s", diff)
			}

			alpha = &v1alpha1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
			filler.Fill(&alpha.Spec)
			filler.Fill(&alpha.Status)
			wantAlpha := &v1alpha1.ClusterPodPlacementConfig{}
			viaJSON(t, alpha, wantAlpha)
			beta = &v1beta1.ClusterPodPlacementConfig{}
			viaJSON(t, alpha, beta)
			gotAlpha := &v1alpha1.ClusterPodPlacementConfig{}
			viaJSON(t, beta, gotAlpha)
			if diff := cmp.Diff(wantAlpha, gotAlpha); diff != "" {
				t.Errorf("v1alpha1 → v1beta1 → v1alpha1 changed the object (-want +got):\n%s", diff)
			}
		})
	}
}
