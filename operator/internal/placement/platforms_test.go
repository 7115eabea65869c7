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

package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

func osIn(values ...string) corev1.NodeSelectorRequirement {
	return expr(v1beta1.NodeOSLabel, corev1.NodeSelectorOpIn, values...)
}

func platformsResult(pairs ...string) ImageArchitectures {
	return ImageArchitectures{Platforms: pairs}
}

func TestPlatformsByOS(t *testing.T) {
	for _, tc := range []struct {
		name    string
		images  []ImageArchitectures
		want    map[string][]string
		wantAny bool
	}{
		{name: "no image runs anywhere", wantAny: true},
		{name: "one multi-OS image", images: []ImageArchitectures{platformsResult("linux/amd64", "linux/arm64", "windows/amd64")},
			want: map[string][]string{"linux": {"amd64", "arm64"}, "windows": {"amd64"}}},
		{name: "intersection pair by pair", images: []ImageArchitectures{
			platformsResult("linux/amd64", "linux/arm64", "windows/amd64"), platformsResult("linux/arm64", "windows/amd64", "windows/arm64")},
			want: map[string][]string{"linux": {"arm64"}, "windows": {"amd64"}}},
		{name: "windows-only and linux-only share nothing", images: []ImageArchitectures{
			platformsResult("windows/amd64"), platformsResult("linux/amd64")}, want: map[string][]string{}},
		{name: "an image without binaries does not narrow", images: []ImageArchitectures{
			{AnyArchitecture: true}, platformsResult("windows/amd64")}, want: map[string][]string{"windows": {"amd64"}}},
		{name: "unrecorded platforms count as linux", images: []ImageArchitectures{
			{Architectures: []string{"amd64", "s390x"}}, platformsResult("linux/s390x", "windows/amd64")},
			want: map[string][]string{"linux": {"s390x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byOS, anyPlatform := PlatformsByOS(tc.images)
			if anyPlatform != tc.wantAny {
				t.Fatalf("anyPlatform = %t, want %t", anyPlatform, tc.wantAny)
			}
			got := map[string][]string{}
			for os, archs := range byOS {
				got[os] = sets.List(archs)
			}
			if tc.wantAny {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("byOS (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeRequiredPlatforms(t *testing.T) {
	linuxWindows := map[string]sets.Set[string]{"linux": sets.New("amd64", "arm64"), "windows": sets.New("amd64")}
	linux := map[string]sets.Set[string]{"linux": sets.New("amd64", "arm64")}
	for _, tc := range []struct {
		name         string
		byOS         map[string]sets.Set[string]
		affinity     *corev1.Affinity
		nodeSelector map[string]string
		want         *corev1.Affinity
		wantOutcome  Outcome
	}{
		{name: "no required terms, one operating system", byOS: linux,
			want:        requiredAffinity(term(osIn("linux"), archIn("amd64", "arm64"))),
			wantOutcome: OutcomeArchSet},
		{name: "no required terms, two operating systems: a term each", byOS: linuxWindows,
			want:        requiredAffinity(term(osIn("linux"), archIn("amd64", "arm64")), term(osIn("windows"), archIn("amd64"))),
			wantOutcome: OutcomeArchSet},
		{name: "user terms are each split per operating system", byOS: linuxWindows,
			affinity: requiredAffinity(term(zoneIn("a")), term(zoneIn("b"))),
			want: requiredAffinity(
				term(zoneIn("a"), osIn("linux"), archIn("amd64", "arm64")), term(zoneIn("a"), osIn("windows"), archIn("amd64")),
				term(zoneIn("b"), osIn("linux"), archIn("amd64", "arm64")), term(zoneIn("b"), osIn("windows"), archIn("amd64"))),
			wantOutcome: OutcomeArchSet},
		{name: "the user's operating system is kept, the architectures of all are added", byOS: linuxWindows,
			affinity:    requiredAffinity(term(osIn("windows"))),
			want:        requiredAffinity(term(osIn("windows"), archIn("amd64", "arm64"))),
			wantOutcome: OutcomeArchSet},
		{name: "the user pinned the architecture: only the operating system is added", byOS: linuxWindows,
			affinity:    requiredAffinity(term(archIn("amd64"))),
			want:        requiredAffinity(term(archIn("amd64"), osIn("linux")), term(archIn("amd64"), osIn("windows"))),
			wantOutcome: OutcomeUserPinned},
		{name: "nodeSelector pins the architecture: only the operating system is added", byOS: linux,
			nodeSelector: map[string]string{v1beta1.NodeArchLabel: "arm64"},
			want:         requiredAffinity(term(osIn("linux"))),
			wantOutcome:  OutcomeUserPinned},
		{name: "an empty user term matches no node and stays so", byOS: linux,
			affinity:    requiredAffinity(term(), term(zoneIn("a"))),
			want:        requiredAffinity(term(), term(zoneIn("a"), osIn("linux"), archIn("amd64", "arm64"))),
			wantOutcome: OutcomeArchSet},
		{name: "nothing shared: nothing changed", byOS: map[string]sets.Set[string]{},
			affinity:    requiredAffinity(term(zoneIn("a"))),
			want:        requiredAffinity(term(zoneIn("a"))),
			wantOutcome: OutcomeNoCommonArch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &corev1.PodSpec{Affinity: tc.affinity, NodeSelector: tc.nodeSelector}
			before := tc.affinity.DeepCopy()
			if got := MergeRequiredPlatforms(spec, tc.byOS); got != tc.wantOutcome {
				t.Errorf("outcome = %s, want %s", got, tc.wantOutcome)
			}
			if diff := cmp.Diff(tc.want, spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.affinity); diff != "" {
				t.Errorf("the old affinity was written (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDecideOperatingSystems(t *testing.T) {
	multiOS := platformsResult("linux/amd64", "linux/arm64", "windows/amd64")
	for _, tc := range []struct {
		name         string
		images       []ImageArchitectures
		on           bool
		nodeSelector map[string]string
		want         *corev1.Affinity
		wantOutcome  Outcome
		wantNoCommon bool
	}{
		{name: "off: linux architectures only, as before", images: []ImageArchitectures{
			{Architectures: []string{"amd64", "arm64"}, Platforms: multiOS.Platforms}},
			want: requiredAffinity(term(archIn("amd64", "arm64"))), wantOutcome: OutcomeArchSet},
		{name: "on: a term per operating system", images: []ImageArchitectures{multiOS}, on: true,
			want:        requiredAffinity(term(osIn("linux"), archIn("amd64", "arm64")), term(osIn("windows"), archIn("amd64"))),
			wantOutcome: OutcomeArchSet},
		{name: "on: a windows-only image is placed, not Pending", images: []ImageArchitectures{platformsResult("windows/amd64")}, on: true,
			want: requiredAffinity(term(osIn("windows"), archIn("amd64"))), wantOutcome: OutcomeArchSet},
		{name: "on: the nodeSelector's operating system narrows", images: []ImageArchitectures{multiOS}, on: true,
			nodeSelector: map[string]string{v1beta1.NodeOSLabel: "windows"},
			want:         requiredAffinity(term(osIn("windows"), archIn("amd64"))), wantOutcome: OutcomeArchSet},
		{name: "on: the nodeSelector's operating system has none of the images' platforms", images: []ImageArchitectures{platformsResult("linux/amd64")},
			on: true, nodeSelector: map[string]string{v1beta1.NodeOSLabel: "windows"}, wantNoCommon: true, wantOutcome: OutcomeNoCommonArch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: tc.nodeSelector}}
			d := Decide(pod, tc.images, nil, nil, Constraints{OperatingSystems: tc.on})
			if d.Outcome != tc.wantOutcome || d.NoCommonArchitecture != tc.wantNoCommon {
				t.Fatalf("outcome %s, no common %t; want %s, %t", d.Outcome, d.NoCommonArchitecture, tc.wantOutcome, tc.wantNoCommon)
			}
			if tc.wantNoCommon {
				return
			}
			if diff := cmp.Diff(tc.want, pod.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
		})
	}
}
