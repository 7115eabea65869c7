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
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
)

func TestUngate(t *testing.T) {
	other := corev1.PodSchedulingGate{Name: "example.com/other"}
	ours := corev1.PodSchedulingGate{Name: v1beta1.SchedulingGateName}
	tests := map[string]struct {
		pod             corev1.Pod
		wantGates       []corev1.PodSchedulingGate
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		"only our gate": {
			pod:       corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}}, Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{ours}}},
			wantGates: nil,
			wantLabels: map[string]string{
				v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: "arch-set",
			},
			wantAnnotations: map[string]string{v1beta1.AnnotationArchitectures: "amd64"},
		},
		"other gates stay in order": {
			pod:       corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{other, ours, {Name: "z"}}}},
			wantGates: []corev1.PodSchedulingGate{other, {Name: "z"}},
			wantLabels: map[string]string{
				v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: "arch-set",
			},
			wantAnnotations: map[string]string{v1beta1.AnnotationArchitectures: "amd64"},
		},
		"user labels and annotations are kept": {
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "y"}},
				Spec:       corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{ours}},
			},
			wantLabels: map[string]string{
				"app": "x", v1beta1.LabelSchedulingGate: v1beta1.LabelValueRemoved, v1beta1.LabelPlacement: "arch-set",
			},
			wantAnnotations: map[string]string{"note": "y", v1beta1.AnnotationArchitectures: "amd64"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			pod := tc.pod.DeepCopy()
			ungate(pod, placement.OutcomeArchSet, map[string]string{v1beta1.AnnotationArchitectures: "amd64"})
			if diff := cmp.Diff(tc.wantGates, pod.Spec.SchedulingGates); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLabels, pod.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, pod.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &tc.pod); diff != "" {
				t.Errorf("input changed:\n%s", diff)
			}
		})
	}
}

func TestRetryTrackerBudget(t *testing.T) {
	const base, maxDelay = 100 * time.Millisecond, 350 * time.Millisecond
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	uid := types.UID("pod-1")

	tests := map[string]struct {
		budget     int
		wantDelays []time.Duration // one per retry, then exhausted
	}{
		"no retry":              {budget: 0, wantDelays: nil},
		"three retries, capped": {budget: 4, wantDelays: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr := newRetryTracker(base, maxDelay, clk)
			var delays []time.Duration
			for range tc.budget + 1 {
				if got := tr.Remaining(uid); got != 0 {
					t.Fatalf("Remaining before the attempt = %v, want 0 (due)", got)
				}
				delay, exhausted := tr.Failed(uid, tc.budget)
				if exhausted {
					break
				}
				delays = append(delays, delay)
				// An event in the middle of the wait must not run the attempt early.
				clk.SetTime(clk.Now().Add(delay / 2))
				if got, want := tr.Remaining(uid), delay-delay/2; got != want {
					t.Fatalf("Remaining mid-wait = %v, want %v", got, want)
				}
				clk.SetTime(clk.Now().Add(delay - delay/2))
			}
			if diff := cmp.Diff(tc.wantDelays, delays); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
			if got := tr.Retries(uid); got != tc.budget {
				t.Errorf("Retries = %d, want %d", got, tc.budget)
			}
			if _, exhausted := tr.Failed(uid, tc.budget); !exhausted {
				t.Error("budget not exhausted after the last retry")
			}
			tr.Forget(uid)
			if tr.Retries(uid) != 0 || tr.Len() != 0 || tr.Remaining(uid) != 0 {
				t.Errorf("state left after Forget: retries %d, len %d", tr.Retries(uid), tr.Len())
			}
			if delay, exhausted := tr.Failed(uid, 1); exhausted || delay != base {
				t.Errorf("after Forget: delay %v exhausted %t, want %v and a fresh budget", delay, exhausted, base)
			}
		})
	}
}

func TestFailureTexts(t *testing.T) {
	failures := []*inspect.Error{
		{Image: "reg.example/private/app:1", Reason: inspect.ReasonAuth, Err: errors.New("unauthorized\nline two")},
		{Image: "reg.example/gone:2", Reason: inspect.ReasonNotFound, Err: errors.New("manifest unknown")},
	}
	if got, want := shortFailure(failures), "auth: reg.example/private/app:1 (+1 more)"; got != want {
		t.Errorf("shortFailure = %q, want %q", got, want)
	}
	if got, want := failureSummary(failures), "auth reg.example/private/app:1, not-found reg.example/gone:2"; got != want {
		t.Errorf("failureSummary = %q, want %q", got, want)
	}
	if got, want := failureDetails(failures), "reg.example/private/app:1 (auth): unauthorized line two; reg.example/gone:2 (not-found): manifest unknown"; got != want {
		t.Errorf("failureDetails = %q, want %q", got, want)
	}
	// Events carry no registry answer, only what archgate decided itself.
	failures = append(failures, &inspect.Error{Image: "blocked.example/app:1", Reason: inspect.ReasonBlocked, Err: errors.New("registry blocked.example is blocked in registries.conf")})
	if got, want := failureReasons(failures), "reg.example/private/app:1 (auth); reg.example/gone:2 (not-found); "+
		"blocked.example/app:1 (blocked): registry blocked.example is blocked in registries.conf"; got != want {
		t.Errorf("failureReasons = %q, want %q", got, want)
	}
}

func TestTruncate(t *testing.T) {
	tests := map[string]struct {
		in   string
		n    int
		want string
	}{
		"short":             {in: "abc", n: 5, want: "abc"},
		"cut":               {in: "abcdefgh", n: 6, want: "abc…"},
		"never splits utf8": {in: "ééééé", n: 6, want: "é…"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := truncate(tc.in, tc.n)
			if got != tc.want || len(got) > tc.n {
				t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}
