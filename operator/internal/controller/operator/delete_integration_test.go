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

package operator_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/operator"
)

const (
	gatedPods     = 500
	podNamespaces = 5
	// racingNamespace is where a stand-in for the pod placement controller processes pods
	// while the operator releases them.
	racingNamespace = "team-0"
	otherGate       = "example.com/other-gate"
)

// userAffinity is the affinity every test pod starts with; a released pod must keep it as is.
var userAffinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
	PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight:     10,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
	}},
}}

func createGatedPods(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i := range podNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%d", i)}}
		if err := k8s.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 16 {
		wg.Go(func() {
			for i := range work {
				gates := []corev1.PodSchedulingGate{{Name: v1beta1.SchedulingGateName}}
				if i%10 == 0 {
					gates = append([]corev1.PodSchedulingGate{{Name: otherGate}}, gates...)
				}
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{
						Namespace: fmt.Sprintf("team-%d", i%podNamespaces),
						Name:      fmt.Sprintf("pod-%04d", i),
						Labels:    map[string]string{"app": "web", v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated},
					},
					Spec: corev1.PodSpec{
						SchedulingGates: gates,
						Affinity:        userAffinity.DeepCopy(),
						Containers:      []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
					},
				}
				if err := k8s.Create(ctx, pod); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	for i := range gatedPods {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatalf("creating pods: %v", err)
	}
}

// racePlacementController stands in for the pod placement controller, which keeps running while
// the operator releases pods: it removes the gate of the pods of racingNamespace with its own
// outcome, through read-modify-update with optimistic locking, as the real one does.
func racePlacementController(ctx context.Context) *atomic.Int32 {
	var done atomic.Int32
	go func() {
		for ctx.Err() == nil {
			pods := &corev1.PodList{}
			if err := k8s.List(ctx, pods, client.InNamespace(racingNamespace),
				client.MatchingLabels{v1beta1.LabelSchedulingGate: v1beta1.LabelValueGated}); err != nil || len(pods.Items) == 0 {
				return
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
					return g.Name == v1beta1.SchedulingGateName
				})
				p.Labels[v1beta1.LabelSchedulingGate] = v1beta1.LabelValueRemoved
				p.Labels[v1beta1.LabelPlacement] = v1beta1.PlacementArchSet
				if err := k8s.Update(ctx, p); err == nil {
					done.Add(1)
				} // a conflict means the operator got there first
				time.Sleep(5 * time.Millisecond) // slow enough for the operator to win some pods
			}
		}
	}()
	return &done
}

// watchDeprovisioning records whether the ClusterPodPlacementConfig ever reported
// Deprovisioning=True while it was being deleted.
func watchDeprovisioning(t *testing.T, ctx context.Context) *atomic.Bool {
	t.Helper()
	var seen atomic.Bool
	w, err := k8s.Watch(ctx, &v1beta1.ClusterPodPlacementConfigList{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			c, ok := ev.Object.(*v1beta1.ClusterPodPlacementConfig)
			if !ok {
				continue
			}
			if d := meta.FindStatusCondition(c.Status.Conditions, v1beta1.ConditionDeprovisioning); d != nil &&
				d.Status == metav1.ConditionTrue && d.Reason == v1beta1.ReasonReleasingGatedPods {
				seen.Store(true)
			}
		}
	}()
	return &seen
}

func TestDeletionReleasesGatedPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	createGatedPods(t)
	if got := managedObjects(t); len(got) == 0 {
		t.Fatal("no components before the deletion")
	}

	deprovisioning := watchDeprovisioning(t, ctx)
	raced := racePlacementController(ctx)
	start := time.Now()
	if err := k8s.Delete(ctx, &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName}}); err != nil {
		t.Fatal(err)
	}
	deleteCluster(t)
	t.Logf("deletion with %d gated pods took %v; the stand-in controller processed %d of them", gatedPods, time.Since(start), raced.Load())

	// No pod is left gated; released pods kept their affinity and other gates.
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != gatedPods {
		t.Fatalf("%d pods, want %d", len(pods.Items), gatedPods)
	}
	outcomes := map[string]int{}
	for _, p := range pods.Items {
		placement := p.Labels[v1beta1.LabelPlacement]
		outcomes[placement]++
		if p.Labels[v1beta1.LabelSchedulingGate] != v1beta1.LabelValueRemoved {
			t.Errorf("pod %s/%s gate label %q", p.Namespace, p.Name, p.Labels[v1beta1.LabelSchedulingGate])
		}
		if slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == v1beta1.SchedulingGateName }) {
			t.Errorf("pod %s/%s still carries the gate", p.Namespace, p.Name)
		}
		var i int
		fmt.Sscanf(p.Name, "pod-%d", &i)
		if keeps := slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == otherGate }); keeps != (i%10 == 0) {
			t.Errorf("pod %s/%s: other gate kept = %t, want %t", p.Namespace, p.Name, keeps, i%10 == 0)
		}
		switch placement {
		case v1beta1.PlacementReleased:
			if diff := cmp.Diff(userAffinity, p.Spec.Affinity); diff != "" {
				t.Errorf("released pod %s/%s affinity changed (-want +got):\n%s", p.Namespace, p.Name, diff)
			}
		case v1beta1.PlacementArchSet:
			if p.Namespace != racingNamespace {
				t.Errorf("pod %s/%s marked %s outside %s", p.Namespace, p.Name, placement, racingNamespace)
			}
		default:
			t.Errorf("pod %s/%s placement label %q", p.Namespace, p.Name, placement)
		}
	}
	t.Logf("pod outcomes: %v", outcomes)
	if outcomes[v1beta1.PlacementArchSet] != int(raced.Load()) {
		t.Errorf("%d pods marked %s, the stand-in controller updated %d", outcomes[v1beta1.PlacementArchSet], v1beta1.PlacementArchSet, raced.Load())
	}
	if got := managedObjects(t); len(got) != 0 {
		t.Errorf("components left after the deletion: %v", got)
	}
	if err := webhookNotRegistered(); err != nil {
		t.Error(err)
	}
	if !deprovisioning.Load() {
		t.Error("Deprovisioning=True (ReleasingGatedPods) was never reported")
	}

	// Recreating the ClusterPodPlacementConfig installs everything again.
	install(t, v1beta1.ClusterPodPlacementConfigSpec{})
	eventually(t, 30*time.Second, "webhook registered again", webhookRegistered)
	want := []string{
		"ClusterRole/" + operator.ControllerComponentName, "ClusterRole/" + operator.WebhookComponentName,
		"ClusterRoleBinding/" + operator.ControllerComponentName, "ClusterRoleBinding/" + operator.WebhookComponentName,
		"ConfigMap/" + operator.KnownImagesName,
		"Deployment/" + operator.ControllerComponentName, "Deployment/" + operator.WebhookComponentName,
		"MutatingWebhookConfiguration/" + operator.DefaultMutatingWebhookConfigurationName,
		"PodDisruptionBudget/" + operator.ControllerComponentName, "PodDisruptionBudget/" + operator.WebhookComponentName,
		"Role/" + operator.ControllerComponentName, "Role/" + operator.WebhookComponentName,
		"RoleBinding/" + operator.ControllerComponentName, "RoleBinding/" + operator.WebhookComponentName,
		"Secret/" + operator.ControllerMetricsSecretName, "Secret/" + operator.WebhookMetricsSecretName,
		"Secret/" + operator.WebhookServingSecretName,
		"Service/" + operator.ControllerMetricsServiceName, "Service/" + operator.WebhookComponentName,
		"Service/" + operator.WebhookMetricsServiceName,
		"ServiceAccount/" + operator.ControllerComponentName, "ServiceAccount/" + operator.WebhookComponentName,
	}
	if diff := cmp.Diff(want, managedObjects(t)); diff != "" {
		t.Errorf("components after recreation (-want +got):\n%s", diff)
	}
}
