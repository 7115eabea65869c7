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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestArchitectureTaintDefaults(t *testing.T) {
	for _, tc := range []struct {
		taint ArchitectureTaint
		want  corev1.Toleration
	}{
		{taint: ArchitectureTaint{Architecture: "arm64"}, // GKE's
			want: corev1.Toleration{Key: NodeArchLabel, Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}},
		{taint: ArchitectureTaint{Architecture: "s390x", Key: "example.com/mainframe", Value: "yes", Effect: corev1.TaintEffectNoExecute},
			want: corev1.Toleration{Key: "example.com/mainframe", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoExecute}},
	} {
		if diff := cmp.Diff(tc.want, tc.taint.Toleration()); diff != "" {
			t.Errorf("%+v: toleration (-want +got):\n%s", tc.taint, diff)
		}
	}
}

func TestValidateArchitectureTaints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		taints []ArchitectureTaint
		// want are the substrings of the errors, in order; none: valid.
		want []string
	}{
		{name: "none"},
		{name: "GKE's and a custom one", taints: []ArchitectureTaint{{Architecture: "arm64"}, {Architecture: "s390x", Key: "example.com/mainframe", Effect: corev1.TaintEffectPreferNoSchedule}}},
		{name: "unknown architecture", taints: []ArchitectureTaint{{Architecture: "riscv64"}},
			want: []string{`spec.architectureTaints[0].architecture: Unsupported value: "riscv64"`}},
		{name: "invalid key", taints: []ArchitectureTaint{{Architecture: "arm64", Key: "bad key"}},
			want: []string{`spec.architectureTaints[0].key: Invalid value: "bad key"`}},
		{name: "invalid value", taints: []ArchitectureTaint{{Architecture: "arm64", Value: "a/b"}},
			want: []string{`spec.architectureTaints[0].value: Invalid value: "a/b"`}},
		{name: "invalid effect", taints: []ArchitectureTaint{{Architecture: "arm64", Effect: "NoRun"}},
			want: []string{`spec.architectureTaints[0].effect: Unsupported value: "NoRun"`}},
		{name: "the same taint twice, once by its defaults", taints: []ArchitectureTaint{
			{Architecture: "arm64"}, {Architecture: "arm64", Key: NodeArchLabel, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}},
			want: []string{`spec.architectureTaints[1]: Duplicate value: "kubernetes.io/arch=arm64:NoSchedule (as entry 0)"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateArchitectureTaints(field.NewPath("spec", "architectureTaints"), tc.taints)
			if len(errs) != len(tc.want) {
				t.Fatalf("ValidateArchitectureTaints() = %v; want %d errors %q", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q; want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}
