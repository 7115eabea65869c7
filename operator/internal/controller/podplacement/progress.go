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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// StallGrace is how long past maxGateAge a pod may keep the gate, and how long the controller
// may go without releasing any pod meanwhile, before it calls itself stalled. Releasing a
// backlog after an outage takes time, but it releases pods all along.
const StallGrace = 2 * time.Minute

// Stalled says why the controller makes no progress, nil when it does: a pod has kept the gate
// longer than MaxGateAge plus StallGrace (every pod is released by its age, whatever holds it,
// so its workers must be stuck) and no pod was released for StallGrace. Pods still held by a
// namespace's own local gate are not the controller's to release and are left out. It reads
// the cache of gated pods' metadata; nil before the controller is bound to one.
func (r *Reconciler) Stalled(ctx context.Context) error {
	if r.cached == nil {
		return nil
	}
	now := r.opts.Clock.Now()
	last := time.Unix(0, r.lastRelease.Load())
	if now.Sub(last) <= StallGrace {
		return nil
	}
	pods, err := gatedPods(ctx, r.cached)
	if err != nil {
		return nil // not synced yet or stopping: readiness says so, not liveness
	}
	var oldest *metav1.PartialObjectMetadata
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Labels[v1beta1.LabelLocalSchedulingGate] == v1beta1.LabelValueGated {
			continue
		}
		if oldest == nil || p.CreationTimestamp.Before(&oldest.CreationTimestamp) {
			oldest = p
		}
	}
	if oldest == nil || oldest.CreationTimestamp.IsZero() {
		return nil
	}
	if age := now.Sub(oldest.CreationTimestamp.Time); age > r.opts.MaxGateAge+StallGrace {
		return fmt.Errorf("pod %s has kept the scheduling gate for %s, past maxGateAge (%s), and no pod was released for %s: the workers make no progress",
			klog.KObj(oldest), age.Round(time.Second), r.opts.MaxGateAge, now.Sub(last).Round(time.Second))
	}
	return nil
}

// released notes that a pod left the gate, for Stalled.
func (r *Reconciler) released() {
	r.lastRelease.Store(r.opts.Clock.Now().UnixNano())
}
