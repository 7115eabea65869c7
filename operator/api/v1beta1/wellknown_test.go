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

package v1beta1_test

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func TestIsReservedNamespace(t *testing.T) {
	tests := map[string]bool{
		"kube-system":       true,
		"kube-public":       true,
		"openshift-config":  true,
		"hypershift-hosted": true,
		"openshift":         false,
		"kube":              false,
		"default":           false,
		"team-kube-x":       false,
	}
	for ns, want := range tests {
		if got := v1beta1.IsReservedNamespace(ns); got != want {
			t.Errorf("IsReservedNamespace(%q) = %t, want %t", ns, got, want)
		}
	}
}

func TestLogVerbosityLevel(t *testing.T) {
	tests := map[v1beta1.LogVerbosityLevel]int{
		v1beta1.LogVerbosityNormal: 0, v1beta1.LogVerbosityDebug: 1, v1beta1.LogVerbosityTrace: 2,
		v1beta1.LogVerbosityTraceAll: 3, "": 0, "Loud": 0,
	}
	for l, want := range tests {
		if got := l.Level(); got != want {
			t.Errorf("%q.Level() = %d, want %d", l, got, want)
		}
	}
}

func TestImageInspectionSettings(t *testing.T) {
	tests := map[string]struct {
		in   *v1beta1.ImageInspection
		want v1beta1.ImageInspectionSettings
	}{
		"nil": {
			want: v1beta1.ImageInspectionSettings{CacheSize: 4096, CacheTTL: 10 * time.Minute, Timeout: 30 * time.Second, MaxRetries: 9,
				FailureCacheTTL: 10 * time.Second, MaxGateAge: 10 * time.Minute, MaxImagesPerPod: 64,
				BlockedNetworks: []string{"127.0.0.0/8", "::1/128", "169.254.0.0/16", "fe80::/10"}},
		},
		"blocked networks replace the default": {
			in: &v1beta1.ImageInspection{BlockedNetworks: []string{"169.254.0.0/16", "10.96.0.0/12"}},
			want: v1beta1.ImageInspectionSettings{CacheSize: 4096, CacheTTL: 10 * time.Minute, Timeout: 30 * time.Second, MaxRetries: 9,
				FailureCacheTTL: 10 * time.Second, MaxGateAge: 10 * time.Minute, MaxImagesPerPod: 64,
				BlockedNetworks: []string{"169.254.0.0/16", "10.96.0.0/12"}},
		},
		"allowed registries are copied": {
			in: &v1beta1.ImageInspection{AllowedRegistries: []string{"quay.io", "*.corp.example"}},
			want: v1beta1.ImageInspectionSettings{CacheSize: 4096, CacheTTL: 10 * time.Minute, Timeout: 30 * time.Second, MaxRetries: 9,
				FailureCacheTTL: 10 * time.Second, MaxGateAge: 10 * time.Minute, MaxImagesPerPod: 64,
				BlockedNetworks: v1beta1.DefaultBlockedNetworks(), AllowedRegistries: []string{"quay.io", "*.corp.example"}},
		},
		"zeros are kept": {
			in: &v1beta1.ImageInspection{CacheSize: ptr.To[int32](0), MaxRetries: ptr.To[int32](0),
				CacheTTL: &metav1.Duration{Duration: time.Hour}, Timeout: &metav1.Duration{Duration: time.Second},
				FailureCacheTTL: &metav1.Duration{}, MaxGateAge: &metav1.Duration{Duration: 2 * time.Hour}, MaxImagesPerPod: ptr.To[int32](1)},
			want: v1beta1.ImageInspectionSettings{CacheSize: 0, CacheTTL: time.Hour, Timeout: time.Second, MaxRetries: 0, MaxGateAge: 2 * time.Hour, MaxImagesPerPod: 1,
				BlockedNetworks: v1beta1.DefaultBlockedNetworks()},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.Settings()); diff != "" {
				t.Errorf("Settings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageInspectionSettingsValidate(t *testing.T) {
	valid := v1beta1.DefaultImageInspectionSettings()
	tests := map[string]struct {
		mutate   func(*v1beta1.ImageInspectionSettings)
		wantErrs []string
	}{
		"defaults":                    {mutate: func(*v1beta1.ImageInspectionSettings) {}},
		"zero cache and zero retries": {mutate: func(s *v1beta1.ImageInspectionSettings) { s.CacheSize, s.MaxRetries = 0, 0 }},
		"upper bounds": {mutate: func(s *v1beta1.ImageInspectionSettings) {
			*s = v1beta1.ImageInspectionSettings{CacheSize: 1_000_000, CacheTTL: 24 * time.Hour, Timeout: 5 * time.Minute, MaxRetries: 20,
				MaxGateAge: 24 * time.Hour, MaxImagesPerPod: 1000}
		}},
		"one image per pod": {mutate: func(s *v1beta1.ImageInspectionSettings) { s.MaxImagesPerPod = 1 }},
		"a network that is not a CIDR": {
			mutate:   func(s *v1beta1.ImageInspectionSettings) { s.BlockedNetworks = []string{"10.0.0.0/8", "cluster"} },
			wantErrs: []string{`spec.imageInspection.blockedNetworks[1]: Invalid value: "cluster": must be a CIDR such as 10.0.0.0/8 or fd00::/8`},
		},
		"allowed registries": {mutate: func(s *v1beta1.ImageInspectionSettings) {
			s.AllowedRegistries = []string{"quay.io", "registry.example.com:5000", "*.corp.example", "10.0.0.7:5000"}
		}},
		"an allowed registry that is not a host": {
			mutate: func(s *v1beta1.ImageInspectionSettings) {
				s.AllowedRegistries = []string{"quay.io", "quay.io/team", "*", "Quay.io"}
			},
			wantErrs: []string{
				`spec.imageInspection.allowedRegistries[1]: Invalid value: "quay.io/team": must be a registry host with an optional port (quay.io, registry.example.com:5000) or *. and a domain`,
				`spec.imageInspection.allowedRegistries[2]: Invalid value: "*": must be a registry host with an optional port (quay.io, registry.example.com:5000) or *. and a domain`,
				`spec.imageInspection.allowedRegistries[3]: Invalid value: "Quay.io": must be a registry host with an optional port (quay.io, registry.example.com:5000) or *. and a domain`,
			},
		},
		"too many images per pod": {
			mutate:   func(s *v1beta1.ImageInspectionSettings) { s.MaxImagesPerPod = 1001 },
			wantErrs: []string{"spec.imageInspection.maxImagesPerPod: Invalid value: 1001: must be within [1, 1000]"},
		},
		"lower bound of the gate age": {mutate: func(s *v1beta1.ImageInspectionSettings) { s.MaxGateAge = time.Minute }},
		"gate age under a minute": {
			mutate:   func(s *v1beta1.ImageInspectionSettings) { s.MaxGateAge = 30 * time.Second },
			wantErrs: []string{`spec.imageInspection.maxGateAge: Invalid value: "30s": must be within [1m0s, 24h0m0s]`},
		},
		"negative cache size": {
			mutate:   func(s *v1beta1.ImageInspectionSettings) { s.CacheSize = -1 },
			wantErrs: []string{"spec.imageInspection.cacheSize: Invalid value: -1: must be within [0, 1000000]"},
		},
		"zero settings": {
			mutate: func(s *v1beta1.ImageInspectionSettings) { *s = v1beta1.ImageInspectionSettings{} },
			wantErrs: []string{
				`spec.imageInspection.cacheTTL: Invalid value: "0s": must be within [1s, 24h0m0s]`,
				`spec.imageInspection.timeout: Invalid value: "0s": must be within [1s, 5m0s]`,
				`spec.imageInspection.maxGateAge: Invalid value: "0s": must be within [1m0s, 24h0m0s]`,
				"spec.imageInspection.maxImagesPerPod: Invalid value: 0: must be within [1, 1000]",
			},
		},
		"too many retries and a long timeout": {
			mutate: func(s *v1beta1.ImageInspectionSettings) { s.MaxRetries, s.Timeout = 21, 6*time.Minute },
			wantErrs: []string{
				`spec.imageInspection.timeout: Invalid value: "6m0s": must be within [1s, 5m0s]`,
				"spec.imageInspection.maxRetries: Invalid value: 21: must be within [0, 20]",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := valid
			tc.mutate(&s)
			var got []string
			for _, e := range s.Validate(field.NewPath("spec", "imageInspection")) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{
		&v1beta1.ClusterPodPlacementConfig{}, &v1beta1.ClusterPodPlacementConfigList{},
		&v1beta1.PodPlacementConfig{}, &v1beta1.PodPlacementConfigList{},
	} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != v1beta1.GroupVersion {
			t.Errorf("%T: kinds %v, err %v", obj, gvks, err)
		}
	}
}

func TestSchedulingGateIndex(t *testing.T) {
	gates := func(names ...string) *corev1.PodSpec {
		spec := &corev1.PodSpec{}
		for _, n := range names {
			spec.SchedulingGates = append(spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
		}
		return spec
	}
	tests := map[string]struct {
		spec      *corev1.PodSpec
		wantIndex int
	}{
		"no gates":                 {spec: gates(), wantIndex: -1},
		"only archgate's":          {spec: gates(v1beta1.SchedulingGateName), wantIndex: 0},
		"after another gate":       {spec: gates("example.com/other", v1beta1.SchedulingGateName), wantIndex: 1},
		"only another gate":        {spec: gates("example.com/other"), wantIndex: -1},
		"a prefix of the name":     {spec: gates("multiarch.openshift.io/scheduling"), wantIndex: -1},
		"the label key, as a gate": {spec: gates(v1beta1.LabelSchedulingGate + "x"), wantIndex: -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := v1beta1.SchedulingGateIndex(tc.spec); got != tc.wantIndex {
				t.Errorf("SchedulingGateIndex() = %d, want %d", got, tc.wantIndex)
			}
			if got, want := v1beta1.HasSchedulingGate(tc.spec), tc.wantIndex >= 0; got != want {
				t.Errorf("HasSchedulingGate() = %v, want %v", got, want)
			}
		})
	}
}
