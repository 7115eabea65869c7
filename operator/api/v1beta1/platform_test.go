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

package v1beta1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestPlatformFromGroups(t *testing.T) {
	for _, tc := range []struct {
		groups []string
		want   Platform
	}{
		{nil, PlatformKubernetes},
		{[]string{"apps", "multiarch.openshift.io"}, PlatformKubernetes},
		{[]string{"apps", "config.openshift.io"}, PlatformOpenShift},
	} {
		if got := PlatformFromGroups(tc.groups); got != tc.want {
			t.Errorf("PlatformFromGroups(%v) = %s, want %s", tc.groups, got, tc.want)
		}
	}
}

// TestGlobalPullSecret checks seed 004's defaults: an explicit reference wins (its namespace
// defaulted to the operator's); unset, openshift-config/pull-secret on OpenShift and
// <operator namespace>/pull-secret elsewhere.
func TestGlobalPullSecret(t *testing.T) {
	const opNS = "archgate-system"
	for name, tc := range map[string]struct {
		ref           *NamespacedObjectReference
		platform      Platform
		want          types.NamespacedName
		wantDefaulted bool
	}{
		"kubernetes default":     {nil, PlatformKubernetes, types.NamespacedName{Namespace: opNS, Name: "pull-secret"}, true},
		"openshift default":      {nil, PlatformOpenShift, types.NamespacedName{Namespace: "openshift-config", Name: "pull-secret"}, true},
		"explicit":               {&NamespacedObjectReference{Namespace: "creds", Name: "regcred"}, PlatformKubernetes, types.NamespacedName{Namespace: "creds", Name: "regcred"}, false},
		"explicit, no namespace": {&NamespacedObjectReference{Name: "regcred"}, PlatformKubernetes, types.NamespacedName{Namespace: opNS, Name: "regcred"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			spec := ClusterPodPlacementConfigSpec{GlobalPullSecretRef: tc.ref}
			got, defaulted := spec.GlobalPullSecret(tc.platform, opNS)
			if got != tc.want || defaulted != tc.wantDefaulted {
				t.Errorf("GlobalPullSecret = %s (defaulted %t), want %s (defaulted %t)", got, defaulted, tc.want, tc.wantDefaulted)
			}
		})
	}
}

// TestValidateForPlatform checks that globalPullSecretRef is refused on OpenShift, with a
// message that says what to do, and allowed elsewhere; caBundleConfigmapRef is allowed on both.
func TestValidateForPlatform(t *testing.T) {
	ref := &NamespacedObjectReference{Namespace: "creds", Name: "regcred"}
	for name, tc := range map[string]struct {
		spec     ClusterPodPlacementConfigSpec
		platform Platform
		want     string // substring of the one error; "" for none
	}{
		"kubernetes with a reference":    {ClusterPodPlacementConfigSpec{GlobalPullSecretRef: ref}, PlatformKubernetes, ""},
		"kubernetes without a reference": {ClusterPodPlacementConfigSpec{}, PlatformKubernetes, ""},
		"openshift without a reference":  {ClusterPodPlacementConfigSpec{CABundleConfigmapRef: ref}, PlatformOpenShift, ""},
		"openshift with a reference": {ClusterPodPlacementConfigSpec{GlobalPullSecretRef: ref}, PlatformOpenShift,
			"spec.globalPullSecretRef: Forbidden: on OpenShift archgate always uses the cluster's global pull secret openshift-config/pull-secret"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := tc.spec.ValidateForPlatform(tc.platform, field.NewPath("spec"))
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
