//go:build integration

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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// TestPlacesPodsByImageArchitectures: the webhook gates each pod at admission, and the
// controller merges the architectures of its images into the required node affinity and
// removes the gate in exactly one write, without any Event.
func TestPlacesPodsByImageArchitectures(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	multi := s.main.Reference("library/multi", "latest")
	arm := s.main.Reference("team/api", "v1")
	amd := s.main.Reference("legacy/tool", "3.1")
	tests := map[string]struct {
		images      []string
		init        string
		wantOutcome placement.Outcome
		wantArchs   []string // nil: no required affinity
		wantAnn     string
	}{
		"multi-arch index with attestations": {images: []string{multi}, wantOutcome: placement.OutcomeArchSet,
			wantArchs: []string{"amd64", "arm64", "ppc64le", "s390x"}, wantAnn: "amd64,arm64,ppc64le,s390x"},
		"single-arch oci manifest": {images: []string{arm}, wantOutcome: placement.OutcomeArchSet,
			wantArchs: []string{"arm64"}, wantAnn: "arm64"},
		"single-arch docker manifest": {images: []string{amd}, wantOutcome: placement.OutcomeArchSet,
			wantArchs: []string{"amd64"}, wantAnn: "amd64"},
		"docker list with windows and arm/v7 entries": {images: []string{s.main.Reference("team/dockerlist", "v2")},
			wantOutcome: placement.OutcomeArchSet, wantArchs: []string{"amd64", "arm"}, wantAnn: "amd64,arm"},
		"image without binaries": {images: []string{s.main.Reference("operators/bundle", "v0.1.0")},
			wantOutcome: placement.OutcomeAnyArchitecture, wantAnn: "*"},
		"init container narrows the set": {images: []string{multi}, init: arm, wantOutcome: placement.OutcomeArchSet,
			wantArchs: []string{"arm64"}, wantAnn: "arm64"},
	}
	pw := watchPods(t, ns)
	patchesBefore := metric(t, s.controllerMetrics, "archgate_placement_pod_patches_total", nil)
	eventsBefore := metric(t, s.controllerMetrics, "archgate_placement_events_total", nil)
	phase := func(name string) float64 {
		return metric(t, s.controllerMetrics, "archgate_placement_reconcile_phase_duration_seconds", map[string]string{"phase": name})
	}
	patchPhasesBefore, inspectionPhasesBefore := phase("patch"), phase("inspection")
	var names []string
	created := map[string]*corev1.Pod{}
	i := 0
	for name, tc := range tests {
		i++
		p := pod(ns, "pod-"+string(rune('a'+i)), tc.images...)
		if tc.init != "" {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: tc.init}}
		}
		created[name] = create(t, p, true)
		names = append(names, p.Name)
	}
	writes := pw.untilUngated(t, names...)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := waitUngated(t, created[name])
			if got := p.Labels[v1beta1.LabelPlacement]; got != tc.wantOutcome.LabelValue() {
				t.Errorf("placement label = %q, want %q", got, tc.wantOutcome)
			}
			if got := p.Annotations[v1beta1.AnnotationArchitectures]; got != tc.wantAnn {
				t.Errorf("architectures annotation = %q, want %q", got, tc.wantAnn)
			}
			var want *corev1.Affinity
			if tc.wantArchs != nil {
				want = objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn(tc.wantArchs...)})
			}
			if diff := cmp.Diff(want, p.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if n := writes[p.Name]; n != 1 {
				t.Errorf("pod modified %d times after creation, want exactly 1 (the ungating write)", n)
			}
		})
	}
	if got := metric(t, s.controllerMetrics, "archgate_placement_pod_patches_total", nil) - patchesBefore; got != float64(len(tests)) {
		t.Errorf("pod patches = %v, want %d", got, len(tests))
	}
	if got := metric(t, s.controllerMetrics, "archgate_placement_events_total", nil) - eventsBefore; got != 0 {
		t.Errorf("events recorded = %v, want 0 in the success path", got)
	}
	// One observation per phase and reconcile: one patch per pod, and at least one inspection.
	if got := phase("patch") - patchPhasesBefore; got != float64(len(tests)) {
		t.Errorf("patch phases observed = %v, want %d", got, len(tests))
	}
	if got := phase("inspection") - inspectionPhasesBefore; got < float64(len(tests)) {
		t.Errorf("inspection phases observed = %v, want at least %d", got, len(tests))
	}
}

// TestKeepsUserConstraints: the user's own node affinity is never overwritten.
func TestKeepsUserConstraints(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	multi := s.main.Reference("library/multi", "latest")
	zoneA := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}

	t.Run("the unpinned term gets the architectures, the pinned one is kept", func(t *testing.T) {
		p := pod(ns, "mixed-terms", multi)
		p.Spec.Affinity = objects.RequiredAffinity([]corev1.NodeSelectorRequirement{zoneA}, []corev1.NodeSelectorRequirement{objects.ArchIn("arm64")})
		got := waitUngated(t, create(t, p, true))
		want := objects.RequiredAffinity(
			[]corev1.NodeSelectorRequirement{zoneA, objects.ArchIn("amd64", "arm64", "ppc64le", "s390x")},
			[]corev1.NodeSelectorRequirement{objects.ArchIn("arm64")},
		)
		if diff := cmp.Diff(want, got.Spec.Affinity); diff != "" {
			t.Errorf("affinity (-want +got):\n%s", diff)
		}
		if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() {
			t.Errorf("placement label = %q", got.Labels[v1beta1.LabelPlacement])
		}
	})
	t.Run("every term pinned: untouched", func(t *testing.T) {
		p := pod(ns, "pinned-terms", multi)
		p.Spec.Affinity = objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("s390x")})
		got := waitUngated(t, create(t, p, true))
		if diff := cmp.Diff(objects.RequiredAffinity([]corev1.NodeSelectorRequirement{objects.ArchIn("s390x")}), got.Spec.Affinity); diff != "" {
			t.Errorf("affinity (-want +got):\n%s", diff)
		}
		if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeUserPinned.LabelValue() {
			t.Errorf("placement label = %q", got.Labels[v1beta1.LabelPlacement])
		}
	})
	t.Run("nodeSelector pin: never gated", func(t *testing.T) {
		p := pod(ns, "node-selector", multi)
		p.Spec.NodeSelector = map[string]string{v1beta1.NodeArchLabel: "arm64"}
		create(t, p, false)
	})
	t.Run("the user's preferred arch terms win over a PodPlacementConfig", func(t *testing.T) {
		if err := s.client.Create(s.ctx, &v1beta1.PodPlacementConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "arm-first"},
			Spec: v1beta1.PodPlacementConfigSpec{Priority: 10, Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{
				Enabled: true, Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 75}, {Architecture: "amd64", Weight: 25}},
			}}},
		}); err != nil {
			t.Fatal(err)
		}
		// The controller reads the configuration from its informer: a pod placed before that has
		// nothing to skip. Probe pods until one carries the configuration's weights.
		probes := 0
		eventually(t, "the controller applying PodPlacementConfig arm-first", func(context.Context) (bool, error) {
			probes++
			probe := waitUngated(t, create(t, pod(ns, fmt.Sprintf("probe-%d", probes), multi), true))
			return probe.Annotations[v1beta1.AnnotationPreferredAffinitySource] == "PodPlacementConfig "+ns+"/arm-first", nil
		})
		userPreferred := []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{objects.ArchIn("s390x")}}}}
		p := pod(ns, "user-preferred", multi)
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: userPreferred}}
		got := waitUngated(t, create(t, p, true))
		if diff := cmp.Diff(userPreferred, got.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution); diff != "" {
			t.Errorf("preferred terms (-want +got):\n%s", diff)
		}
		if e := waitEvent(t, p, "PreferredAffinitySkipped"); e.Type != corev1.EventTypeNormal {
			t.Errorf("event type = %q", e.Type)
		}

		// Without a preference of its own, the pod gets the configuration's weights.
		q := waitUngated(t, create(t, pod(ns, "config-preferred", multi), true))
		want := []corev1.PreferredSchedulingTerm{
			{Weight: 75, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{objects.ArchIn("arm64")}}},
			{Weight: 25, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{objects.ArchIn("amd64")}}},
		}
		if diff := cmp.Diff(want, q.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution); diff != "" {
			t.Errorf("preferred terms (-want +got):\n%s", diff)
		}
	})
}

// TestWebhookSkipsReservedNamespaces: pods of kube-* and of the operator's namespace are not gated.
func TestWebhookSkipsReservedNamespaces(t *testing.T) {
	for _, ns := range []string{"kube-system", operatorNamespace} {
		t.Run(ns, func(t *testing.T) {
			p := create(t, pod(ns, "skip-"+randomSuffix(), s.main.Reference("library/multi", "latest")), false)
			t.Cleanup(func() { _ = s.client.Delete(context.Background(), p) })
		})
	}
}

// TestPrivateRepository: a private image is inspected with the pod's pull secret; without the
// right one, the gate is removed after the retry budget with the affinity unchanged.
func TestPrivateRepository(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	image := s.main.Reference("private/app", "v1")
	for _, sec := range []*corev1.Secret{
		objects.PullSecret(ns, "team-pull").WithCredentials(s.main.Host(), teamUser, teamPassword).Build(),
		objects.PullSecret(ns, "wrong-pull").WithCredentials(s.main.Host()+"/private", teamUser, "wrong").Build(),
	} {
		if err := s.client.Create(s.ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	userAffinity := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}})

	t.Run("with the right pull secret", func(t *testing.T) {
		p := pod(ns, "with-secret", image)
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "team-pull"}}
		got := waitUngated(t, create(t, p, true))
		if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() || got.Annotations[v1beta1.AnnotationArchitectures] != "amd64,s390x" {
			t.Errorf("labels %v annotations %v", got.Labels, got.Annotations)
		}
	})
	for name, secrets := range map[string][]corev1.LocalObjectReference{
		"without a pull secret":         nil,
		"with a wrong password":         {{Name: "wrong-pull"}},
		"with a secret that is missing": {{Name: "absent"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := pod(ns, "no-access-"+randomSuffix(), image)
			p.Spec.ImagePullSecrets = secrets
			p.Spec.Affinity = userAffinity.DeepCopy()
			got := waitUngated(t, create(t, p, true))
			if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeInspectionFailed.LabelValue() {
				t.Errorf("placement label = %q, want %q", got.Labels[v1beta1.LabelPlacement], placement.OutcomeInspectionFailed)
			}
			if diff := cmp.Diff(userAffinity, got.Spec.Affinity); diff != "" {
				t.Errorf("affinity changed (-want +got):\n%s", diff)
			}
			if want := "auth: " + image; got.Annotations[v1beta1.AnnotationInspectionError] != want {
				t.Errorf("inspection error annotation = %q, want %q", got.Annotations[v1beta1.AnnotationInspectionError], want)
			}
			if e := waitEvent(t, p, "InspectionFailed"); e.Type != corev1.EventTypeWarning {
				t.Errorf("event type = %q", e.Type)
			}
		})
	}
}

// TestGlobalPullSecret: the global pull secret grants access to pods without their own; when it
// changes, the controller reads it again within 10 s of a pod needing it, and what was cached
// under its old credentials is invalidated.
func TestGlobalPullSecret(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	image := s.main.Reference("global-only/app", "v1")
	secret := objects.PullSecret(operatorNamespace, globalSecretName).WithCredentials(s.main.Host(), globalUser, globalPassword).Build()
	if err := s.client.Create(s.ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.client.Delete(context.Background(), secret) })

	// The controller reads the global pull secret when a pod first needs it (this test's
	// controller may have read it missing before), so create pods until one gets through.
	eventually(t, "a pod placed with the global pull secret", func(context.Context) (bool, error) {
		got := waitUngated(t, create(t, pod(ns, "with-global-"+randomSuffix(), image), true))
		return got.Annotations[v1beta1.AnnotationArchitectures] == "arm64,ppc64le", nil
	})

	invalidated := func() float64 {
		return metric(t, s.controllerMetrics, "archgate_inspect_cache_evictions_total", map[string]string{"reason": "invalidated"})
	}
	before := invalidated()
	secret.Data = objects.PullSecret("", "").WithCredentials(s.main.Host(), globalUser, "rotated-away").Build().Data
	if err := s.client.Update(s.ctx, secret); err != nil {
		t.Fatal(err)
	}
	// Pods are placed with the old credentials' cached result until the controller reads the
	// secret again; the first pod after that is inspected with the rotated (refused) ones.
	eventually(t, "a pod inspected with the rotated global pull secret", func(context.Context) (bool, error) {
		got := waitUngated(t, create(t, pod(ns, "after-rotation-"+randomSuffix(), image), true))
		return got.Labels[v1beta1.LabelPlacement] == placement.OutcomeInspectionFailed.LabelValue(), nil
	})
	if invalidated() <= before {
		t.Errorf("no cache entry of the old global credentials invalidated (a stale entry would have answered)")
	}

	// Deleted, the secret stops being sent within the refresh period: the tests after this one
	// share the controller, and a public image inspected with the refused credentials fails.
	if err := s.client.Delete(s.ctx, secret); err != nil {
		t.Fatal(err)
	}
	public := s.main.Reference("team/api", "v1")
	eventually(t, "a public image inspected without the deleted global pull secret", func(context.Context) (bool, error) {
		got := waitUngated(t, create(t, pod(ns, "after-deletion-"+randomSuffix(), public), true))
		return got.Labels[v1beta1.LabelPlacement] != placement.OutcomeInspectionFailed.LabelValue(), nil
	})
}

// TestRegistryOutage: during an outage, the gate is removed after the retry budget with the
// affinity unchanged; retries are spaced by the backoff, not by pod events.
func TestRegistryOutage(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	if err := s.flaky.SetFaults(fakeregistry.Faults{Outage: fakeregistry.OutageUnavailable}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.flaky.SetFaults(fakeregistry.Faults{}) })
	s.flaky.Counters().Reset()
	retriesBefore := metric(t, s.controllerMetrics, "archgate_placement_inspection_retries_total", nil)

	userAffinity := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}})
	p := pod(ns, "outage", s.flaky.Reference("flaky/app", "v1"))
	p.Spec.Affinity = userAffinity.DeepCopy()
	got := waitUngated(t, create(t, p, true))
	if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeInspectionFailed.LabelValue() {
		t.Errorf("placement label = %q, want %q", got.Labels[v1beta1.LabelPlacement], placement.OutcomeInspectionFailed)
	}
	if diff := cmp.Diff(userAffinity, got.Spec.Affinity); diff != "" {
		t.Errorf("affinity changed (-want +got):\n%s", diff)
	}
	if want := "network: " + p.Spec.Containers[0].Image; got.Annotations[v1beta1.AnnotationInspectionError] != want {
		t.Errorf("inspection error annotation = %q, want %q", got.Annotations[v1beta1.AnnotationInspectionError], want)
	}
	if got := metric(t, s.controllerMetrics, "archgate_placement_inspection_retries_total", nil) - retriesBefore; got != maxRetries {
		t.Errorf("retries = %v, want the budget %d", got, maxRetries)
	}
	// Every attempt reached the registry once (a ping answered 503): budget + 1 attempts.
	if snap := s.flaky.Counters().Snapshot(); snap.Requests[fakeregistry.KindPing] != maxRetries+1 {
		t.Errorf("registry pings = %d, want %d (one per attempt)", snap.Requests[fakeregistry.KindPing], maxRetries+1)
	}
	waitEvent(t, p, "InspectionFailed")
}

// TestRegistryMirror: registries.conf mirrors are honoured; the mirror answers while the primary
// registry is down.
func TestRegistryMirror(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	got := waitUngated(t, create(t, pod(ns, "mirrored", s.primary.Reference("mirrored/app", "v1")), true))
	if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() || got.Annotations[v1beta1.AnnotationArchitectures] != "ppc64le,s390x" {
		t.Fatalf("labels %v annotations %v", got.Labels, got.Annotations)
	}
	// Cumulative: with -count>1 later runs are (correctly) answered from the inspection cache.
	if n := s.mirror.Counters().Snapshot().Manifests[fakeregistry.ManifestRef{Repository: "mirrored/app", Reference: "v1"}]; n.Get == 0 {
		t.Error("the mirror served no manifest")
	}
	if snap := s.primary.Counters().Snapshot(); snap.Statuses[200] != 0 {
		t.Errorf("the primary answered %d requests successfully during its outage", snap.Statuses[200])
	}
}

// TestRegistryMirrorCredentials: an image whose registry is down is inspected in its mirror
// with the controller's auth file entry for that mirror; the pod's own pull secret, written for
// the primary, is never sent to the mirror: the mirror's mirrored-other/ (which only the pod's
// credential could read, and the auth file has no entry for) stays closed to the controller.
func TestRegistryMirrorCredentials(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	if err := s.client.Create(s.ctx, objects.PullSecret(ns, "primary-pull").WithCredentials(s.primary.Host(), teamUser, teamPassword).Build()); err != nil {
		t.Fatal(err)
	}
	withSecret := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "primary-pull"}}
		return p
	}

	got := waitUngated(t, create(t, withSecret(pod(ns, "mirror-auth", s.primary.Reference("mirrored-private/app", "v1"))), true))
	if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() || got.Annotations[v1beta1.AnnotationArchitectures] != "arm64,s390x" {
		t.Fatalf("labels %v annotations %v", got.Labels, got.Annotations)
	}
	if n := s.mirror.Counters().Snapshot().Manifests[fakeregistry.ManifestRef{Repository: "mirrored-private/app", Reference: "v1"}]; n.Get == 0 {
		t.Error("the mirror served no manifest")
	}

	got = waitUngated(t, create(t, withSecret(pod(ns, "pod-secret-not-sent", s.primary.Reference("mirrored-other/app", "v1"))), true))
	if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeInspectionFailed.LabelValue() {
		t.Errorf("placement label = %q, want %q: the pod's pull secret reached the mirror", got.Labels[v1beta1.LabelPlacement], placement.OutcomeInspectionFailed)
	}
}

// TestShortNames: a short image name is resolved with registries.conf's
// unqualified-search-registries, in order, as CRI-O resolves it: the first registry that serves
// the image answers, each with its own credentials.
func TestShortNames(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	for name, tc := range map[string]struct {
		image, wantArchitectures string
	}{
		"in the first search registry":                    {image: "mirrored/app:v1", wantArchitectures: "ppc64le,s390x"},
		"not readable in the first, served by the second": {image: "team/api:v1", wantArchitectures: "arm64"},
		"official-image form in the second":               {image: "library/multi", wantArchitectures: "amd64,arm64,ppc64le,s390x"},
	} {
		t.Run(name, func(t *testing.T) {
			got := waitUngated(t, create(t, pod(ns, "short-"+randomSuffix(), tc.image), true))
			if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeArchSet.LabelValue() || got.Annotations[v1beta1.AnnotationArchitectures] != tc.wantArchitectures {
				t.Errorf("labels %v annotations %v, want architectures %s", got.Labels, got.Annotations, tc.wantArchitectures)
			}
		})
	}
	t.Run("in no search registry", func(t *testing.T) {
		got := waitUngated(t, create(t, pod(ns, "short-missing", "nowhere/app:v1"), true))
		if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeInspectionFailed.LabelValue() {
			t.Errorf("placement label = %q, want %q", got.Labels[v1beta1.LabelPlacement], placement.OutcomeInspectionFailed)
		}
	})
}

// TestBlockedRegistry: an image in a registry that registries.conf blocks is not retried: the
// pod is released at once, unplaced, with the reason in its annotation and a Warning Event.
func TestBlockedRegistry(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	image := blockedRegistry + "/team/app:1"
	p := create(t, pod(ns, "blocked", image), true)
	got := waitUngated(t, p)
	if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeInspectionFailed.LabelValue() {
		t.Errorf("placement label = %q, want %q", got.Labels[v1beta1.LabelPlacement], placement.OutcomeInspectionFailed.LabelValue())
	}
	if want := "blocked: " + image; got.Annotations[v1beta1.AnnotationInspectionError] != want {
		t.Errorf("inspection error annotation = %q, want %q", got.Annotations[v1beta1.AnnotationInspectionError], want)
	}
	if got.Spec.Affinity != nil && got.Spec.Affinity.NodeAffinity != nil {
		t.Errorf("node affinity set for a pod whose image could not be read: %+v", got.Spec.Affinity.NodeAffinity)
	}
	e := waitEvent(t, p, "InspectionFailed")
	if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "is blocked in") || !strings.Contains(e.Note, "after 1 attempt") {
		t.Errorf("event %s %q, want a Warning saying the registry is blocked, after 1 attempt", e.Type, e.Note)
	}
}

// TestNoCommonArchitecture: a pod whose images share no architecture is ungated but kept Pending
// by an unsatisfiable requirement, labelled and warned about.
func TestNoCommonArchitecture(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	p := pod(ns, "no-common", s.main.Reference("team/api", "v1"), s.main.Reference("legacy/tool", "3.1"))
	got := waitUngated(t, create(t, p, true))
	if got.Labels[v1beta1.LabelPlacement] != placement.OutcomeNoCommonArch.LabelValue() {
		t.Errorf("placement label = %q", got.Labels[v1beta1.LabelPlacement])
	}
	want := objects.RequiredAffinity([]corev1.NodeSelectorRequirement{placement.NoSupportedArchitectureRequirement()})
	if diff := cmp.Diff(want, got.Spec.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %q, want Pending", got.Status.Phase)
	}
	if e := waitEvent(t, p, "NoCommonArchitecture"); e.Type != corev1.EventTypeWarning {
		t.Errorf("event type = %q", e.Type)
	}
}

// TestGatedPodsGauge: the gauge is computed from the cache and reads 0 once every pod is done.
func TestGatedPodsGauge(t *testing.T) {
	startController(t)
	eventually(t, "no gated pod left", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := s.client.List(ctx, pods, client.MatchingLabels{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	eventually(t, "the gated pods gauge at 0", func(context.Context) (bool, error) {
		return metric(t, s.controllerMetrics, "archgate_placement_gated_pods", nil) == 0, nil
	})
	if n := metric(t, s.controllerMetrics, "archgate_placement_pods_processed_total", nil); n == 0 {
		t.Error("no processed pods counted")
	}
}
