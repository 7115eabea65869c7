//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
)

// failoverMargin is what the failover may take beyond the lease duration: the standby's retry
// period (2 s), the leader pod's deletion and the new leader's cache sync, on a shared 2-core
// machine. The leader releases its lease on SIGTERM, so the failover is usually much shorter
// than the lease duration.
const failoverMargin = 15 * time.Second

// gateDrainBound bounds how long the controller may take to release the test's pods once they
// were all created.
const gateDrainBound = 2 * time.Minute

// testLeaderFailover deletes the pod holding the controller's leader-election lease while a
// Deployment's pods are created: another replica must take the lease within its duration plus
// failoverMargin, and every pod (of an image the webhook does not know: the controller must place
// them) must be placed by the controller.
func testLeaderFailover(ctx context.Context, e *env) {
	ns := e.newNamespace(ctx, "failover")
	leases := e.cs.CoordinationV1().Leases(namespace)
	lease, err := leases.Get(ctx, components.DefaultLeaderElectionID, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	leader := holderPod(ptr.Deref(lease.Spec.HolderIdentity, ""))
	bound := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0))*time.Second + failoverMargin

	start := time.Now()
	if err := e.cs.CoreV1().Pods(namespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("deleting the leader pod %s (lease holder %q): %v", leader, ptr.Deref(lease.Spec.HolderIdentity, ""), err)
	}
	e.createDeployment(ctx, ns, "during-failover", 3, onFakeNodes(armPower))
	var newLeader string
	e.waitWithin(ctx, bound, "a new controller leader (lease duration + margin)", func() bool {
		l, err := leases.Get(ctx, components.DefaultLeaderElectionID, metav1.GetOptions{})
		if err != nil {
			return false
		}
		newLeader = holderPod(ptr.Deref(l.Spec.HolderIdentity, ""))
		return newLeader != "" && newLeader != leader
	})
	e.t.Logf("figure: controller leader failover %s (pod %s deleted, %s took the lease; bound %s = lease duration + %s)",
		time.Since(start).Round(time.Millisecond), leader, newLeader, bound, failoverMargin)
	for _, pod := range e.waitPods(ctx, ns, 3, "Running", isRunning) {
		e.checkPlaced(&pod, "arm64", "ppc64le")
	}
	e.waitAvailable(ctx, namespace, "archgate-controller")
	e.checkNoGatedPods(ctx)
}

// holderPod returns the pod name of a controller-runtime lease holder identity
// ("<hostname>_<uuid>", the hostname being the pod name).
func holderPod(identity string) string {
	pod, _, _ := strings.Cut(identity, "_")
	return pod
}

// checkNoGatedPods waits, within gateDrainBound, until no pod of the cluster carries the gate.
func (e *env) checkNoGatedPods(ctx context.Context) {
	e.t.Helper()
	e.waitWithin(ctx, gateDrainBound, "no gated pod left", func() bool {
		return len(e.gatedPods(ctx)) == 0
	})
}

// gatedPods lists the pods of the cluster that still carry the scheduling gate; nil on error.
func (e *env) gatedPods(ctx context.Context) []string {
	pods, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelSchedulingGate + "=" + v1beta1.LabelValueGated})
	if err != nil {
		return []string{"(listing pods: " + err.Error() + ")"}
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// waitWithin is waitFor with a bound of its own: the test fails when cond does not hold within it.
func (e *env) waitWithin(ctx context.Context, bound time.Duration, what string, cond func() bool) {
	e.t.Helper()
	bounded, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	e.waitFor(bounded, fmt.Sprintf("%s within %s", what, bound), cond)
}

// testWebhookRollingUpdate creates pods continuously (loadWorkers creators, bare pods of the
// arm64-only image) while the webhook Deployment rolls all its replicas; every pod must have been
// seen by the webhook (gated, or placed at admission) and be released at the end.
func testWebhookRollingUpdate(ctx context.Context, e *env) {
	ns := e.newNamespace(ctx, "load")
	load := startLoad(ctx, e, ns)
	start := time.Now()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"e2e.archgate.io/restarted-at":%q}}}}}`, start.Format(time.RFC3339Nano))
	if _, err := e.cs.AppsV1().Deployments(namespace).Patch(ctx, "archgate-webhook", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitRolledOut(ctx, namespace, "archgate-webhook")
	rollout := time.Since(start)
	created, failed := load.stop()
	e.t.Logf("figure: webhook rollout under load %s (all replicas replaced, old ones gone)", rollout.Round(time.Millisecond))
	if failed > 0 {
		e.t.Errorf("%d pod creations failed during the rollout", failed)
	}

	e.waitWithin(ctx, gateDrainBound, "the load's pods released", func() bool {
		return countPods(e.listPods(ctx, ns), func(p *corev1.Pod) bool { return !ungated(p) }) == 0
	})
	pods := e.listPods(ctx, ns)
	neverGated := countPods(pods, func(p *corev1.Pod) bool { return p.Labels[v1beta1.LabelSchedulingGate] == "" })
	gatedAtEnd := countPods(pods, func(p *corev1.Pod) bool { return !ungated(p) })
	e.t.Logf("figure: webhook rolling update under load: %d pods created, %d never gated, %d gated at the end", created, neverGated, gatedAtEnd)
	if len(pods) != created || neverGated != 0 || gatedAtEnd != 0 {
		e.t.Errorf("pods listed %d (created %d), never gated %d, gated at the end %d: want every pod gated and released", len(pods), created, neverGated, gatedAtEnd)
	}
}

// loadWorkers create pods concurrently, each one every loadInterval at most (a create takes
// ~0.1-0.3 s on the shared machine): about 10-20 pods/s, all through the webhook.
const (
	loadWorkers  = 4
	loadInterval = 100 * time.Millisecond
)

// load creates pods until stopped.
type load struct {
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	created, failed atomic.Int64
}

func startLoad(ctx context.Context, e *env, ns string) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel}
	for range loadWorkers {
		l.wg.Go(func() { l.createPods(ctx, e, ns) })
	}
	return l
}

func (l *load) createPods(ctx context.Context, e *env, ns string) {
	tick := time.NewTicker(loadInterval)
	defer tick.Stop()
	for {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-"}, Spec: onFakeNodes(arm64Only)}
		if _, err := e.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err == nil {
			l.created.Add(1)
		} else if ctx.Err() == nil {
			l.failed.Add(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stop ends the load and returns how many pods were created and how many creations failed.
func (l *load) stop() (created, failed int) {
	l.cancel()
	l.wg.Wait()
	return int(l.created.Load()), int(l.failed.Load())
}

// waitRolledOut waits until every replica of the Deployment is updated and available and no pod
// of an older revision is left (terminating ones included: they serve until they are gone).
func (e *env) waitRolledOut(ctx context.Context, ns, name string) {
	e.t.Helper()
	e.waitFor(ctx, "Deployment "+ns+"/"+name+" rolled out", func() bool {
		d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
			return false
		}
		pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		return err == nil && len(pods.Items) == int(want)
	})
}

func (e *env) listPods(ctx context.Context, ns string) []corev1.Pod {
	e.t.Helper()
	pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pods.Items
}

func countPods(pods []corev1.Pod, cond func(*corev1.Pod) bool) int {
	n := 0
	for i := range pods {
		if cond(&pods[i]) {
			n++
		}
	}
	return n
}
