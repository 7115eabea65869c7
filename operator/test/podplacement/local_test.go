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
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/pkg/components"
)

// Local placement (seed 003 phase 2): a namespace's local webhook adds the local gate, its local
// controller applies the namespace's PodPlacementConfigs and removes it; the cluster-wide
// controller waits for that, then applies the required affinity. The tests register the local
// webhook as the operator does (an entry of archgate-local-scheduling-gate for the namespace).

// webWeights is the PodPlacementConfig the tests create: pods labelled app=web prefer arm64.
func webConfig(ns string) *v1beta1.PodPlacementConfig {
	return &v1beta1.PodPlacementConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1beta1.PodPlacementConfigSpec{
			Priority:      10,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Plugins: &v1beta1.Plugins{NodeAffinityScoring: &v1beta1.NodeAffinityScoring{Enabled: true,
				Platforms: []v1beta1.NodeAffinityScoringPlatformTerm{{Architecture: "arm64", Weight: 75}, {Architecture: "amd64", Weight: 25}}}},
		},
	}
}

// startLocalWebhook serves ns's local webhook and registers its entry, until the test ends; ns must
// already hold webConfig, which selects the dry-run probe that shows the entry is in use.
func startLocalWebhook(t *testing.T, ns string) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- components.RunLocalWebhook(ctx, s.cfg, components.LocalWebhookOptions{
			Common:    components.Common{Logger: s.log.WithName("local-webhook"), Restartable: true, Ready: func() { close(ready) }},
			Namespace: ns, Host: "127.0.0.1", Port: port, CertDir: s.servingCertDir,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local webhook: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("local webhook stopped before serving: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("local webhook not serving")
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + components.LocalWebhookPath
	mwc := components.MutatingWebhookConfiguration(components.WebhookConfigurationOptions{
		Name:              "archgate-local-scheduling-gate-" + ns,
		ClientConfig:      admissionregistrationv1.WebhookClientConfig{URL: &url},
		CABundle:          s.servingCA,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		OperatorNamespace: operatorNamespace,
		EntryName:         components.LocalWebhookEntryName(ns),
		Path:              components.LocalWebhookPath,
	})
	if err := s.client.Create(s.ctx, mwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.client.Delete(context.Background(), mwc) })
	// The apiserver calls a new webhook only once its configuration informer has seen it; a pod
	// created before then would miss the local gate. Dry runs show when it does, leaving nothing.
	eventually(t, "the apiserver calling the local webhook of "+ns, func(ctx context.Context) (bool, error) {
		probe := pod(ns, "probe", "example.com/probe:1")
		probe.Labels = maps.Clone(webConfig(ns).Spec.LabelSelector.MatchLabels)
		if err := s.client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		return v1beta1.HasLocalSchedulingGate(&probe.Spec), nil
	})
}

// startLocalController runs ns's local controller until the test ends.
func startLocalController(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(s.ctx)
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- components.RunLocalController(ctx, s.cfg, components.LocalControllerOptions{
			Common:    components.Common{Logger: s.log.WithName("local-controller"), Restartable: true, Ready: func() { close(ready) }},
			Namespace: ns,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local controller: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("local controller stopped before it was ready: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("local controller not ready")
	}
}

// gateSteps records, for one pod, the scheduling gates it carried after each change.
func gateSteps(t *testing.T, ns, name string) func() [][]string {
	t.Helper()
	wc, err := client.NewWithWatch(s.cfg, client.Options{Scheme: s.scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(s.ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	// The steps are read once the watch has delivered the pod's ungated state: a separate watch
	// from the test's own may still hold the last event when the test sees the pod ungated.
	ch := make(chan [][]string, 1)
	go func() {
		var steps [][]string
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			var names []string
			for _, g := range p.Spec.SchedulingGates {
				names = append(names, g.Name)
			}
			steps = append(steps, names)
			if len(names) == 0 {
				break
			}
		}
		ch <- steps
	}()
	return func() [][]string {
		defer w.Stop()
		select {
		case got := <-ch:
			return got
		case <-time.After(waitTimeout):
			t.Fatalf("pod %s/%s: the watch delivered no ungated state within %v", ns, name, waitTimeout)
			return nil
		}
	}
}

func TestLocalGateThenClusterGate(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	if err := s.client.Create(s.ctx, webConfig(ns)); err != nil {
		t.Fatal(err)
	}
	startLocalWebhook(t, ns)
	arm := s.main.Reference("library/multi", "latest")

	steps := gateSteps(t, ns, "web")
	pw := watchPods(t, ns)
	web := create(t, pod(ns, "web", arm), true)
	if !v1beta1.HasLocalSchedulingGate(&web.Spec) || web.Labels[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueGated {
		t.Fatalf("pod web: gates %v, labels %v; want the local gate too", web.Spec.SchedulingGates, web.Labels)
	}
	// A pod no PodPlacementConfig selects gets no local gate; once the cluster-wide controller has
	// placed it, it has seen web too, and must have left it alone.
	other := create(t, pod(ns, "other", arm), true)
	if v1beta1.HasLocalSchedulingGate(&other.Spec) {
		t.Fatalf("pod other: gates %v; want no local gate (no configuration selects it)", other.Spec.SchedulingGates)
	}
	waitUngated(t, other)
	still := &corev1.Pod{}
	if err := s.client.Get(s.ctx, client.ObjectKeyFromObject(web), still); err != nil {
		t.Fatal(err)
	}
	if !gated(still) {
		t.Fatalf("the cluster-wide controller removed its gate while the local gate was on: gates %v", still.Spec.SchedulingGates)
	}

	startLocalController(t, ns)
	placed := waitUngated(t, web)
	writes := pw.untilUngated(t, "web")["web"]
	want := [][]string{
		{v1beta1.LocalSchedulingGateName, v1beta1.SchedulingGateName}, // created: local webhook first, by name
		{v1beta1.SchedulingGateName},                                  // local controller's write
		nil,                                                           // cluster-wide controller's write
	}
	if got := steps(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("gates after each change = %v, want %v", got, want)
	}
	if writes != 2 {
		t.Errorf("pod web was written %d times after its creation, want 2 (one per gate)", writes)
	}
	if got := placed.Annotations[v1beta1.AnnotationPreferredAffinitySource]; got != "PodPlacementConfig "+ns+"/web" {
		t.Errorf("preferred-affinity-source = %q, want the namespace's configuration", got)
	}
	if placed.Labels[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueRemoved {
		t.Errorf("label %s = %q, want %q", v1beta1.LabelLocalSchedulingGate, placed.Labels[v1beta1.LabelLocalSchedulingGate], v1beta1.LabelValueRemoved)
	}
	na := placed.Spec.Affinity.NodeAffinity
	if na == nil || na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Fatalf("node affinity %+v: want the required architectures and the two preferred weights", na)
	}
	if w := na.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight; w != 75 {
		t.Errorf("first preferred weight = %d, want 75 (arm64)", w)
	}
}

// TestLocalGateReleased: the operator releases the local gate without processing (the last
// PodPlacementConfig of the namespace went); the cluster-wide controller then applies the
// configurations itself, so the pod loses nothing.
func TestLocalGateReleased(t *testing.T) {
	startController(t)
	ns := newNamespace(t)
	if err := s.client.Create(s.ctx, webConfig(ns)); err != nil {
		t.Fatal(err)
	}
	startLocalWebhook(t, ns)
	web := create(t, pod(ns, "web", s.main.Reference("library/multi", "latest")), true)
	if !v1beta1.HasLocalSchedulingGate(&web.Spec) {
		t.Fatalf("pod web: gates %v; want the local gate", web.Spec.SchedulingGates)
	}
	releaseLocal(t, ns)
	placed := waitUngated(t, web)
	if placed.Labels[v1beta1.LabelLocalSchedulingGate] != v1beta1.LabelValueReleased {
		t.Errorf("label %s = %q, want %q", v1beta1.LabelLocalSchedulingGate, placed.Labels[v1beta1.LabelLocalSchedulingGate], v1beta1.LabelValueReleased)
	}
	if got := placed.Annotations[v1beta1.AnnotationPreferredAffinitySource]; got != "PodPlacementConfig "+ns+"/web" {
		t.Errorf("preferred-affinity-source = %q, want the namespace's configuration (applied by the cluster-wide controller)", got)
	}
	if slices.ContainsFunc(placed.Spec.SchedulingGates, v1beta1.IsLocalSchedulingGate) {
		t.Errorf("local gate still on: %v", placed.Spec.SchedulingGates)
	}
}

// releaseLocal releases the local gates of ns as the operator does when the namespace's last
// PodPlacementConfig is deleted.
func releaseLocal(t *testing.T, ns string) {
	t.Helper()
	sum, err := podplacement.Release(s.ctx, s.client, podplacement.ReleaseOptions{Namespace: ns, Local: true})
	if err != nil || sum.Released != 1 {
		t.Fatalf("releasing the local gates of %s: %+v, %v; want 1 released", ns, sum, err)
	}
}
