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

package execformatmonitor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxOwners bounds the owners whose last deletion is remembered; past it the least recently
// deleted is forgotten early, which can only allow one more deletion for it.
const maxOwners = 10_000

// Results of a deletion, the values of LabelResult.
const (
	resultDeleted = "deleted"
	resultSkipped = "skipped"
)

// deletions remembers which owners had a pod deleted within the interval. It lives in the
// leader's memory: a new leader may delete once more for an owner, which the interval is only
// there to slow down, not to forbid.
type deletions struct {
	interval time.Duration
	mu       sync.Mutex // claim checks and records in one step across the workers
	recent   *expirable.LRU[types.UID, struct{}]
}

func newDeletions(interval time.Duration) *deletions {
	return &deletions{interval: interval, recent: expirable.NewLRU[types.UID, struct{}](maxOwners, nil, interval)}
}

// claim reports whether owner may have a pod deleted now, and records that it does.
func (d *deletions) claim(owner types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.recent.Contains(owner) {
		return false
	}
	d.recent.Add(owner, struct{}{})
	return true
}

// unclaim forgets a claim whose deletion failed.
func (d *deletions) unclaim(owner types.UID) { d.recent.Remove(owner) }

// RecreatingOwner returns the controller of pod when it recreates a deleted pod where the
// scheduler, and archgate, choose again: a ReplicaSet, a StatefulSet or a ReplicationController.
// A DaemonSet recreates its pod on the same node, and a Job counts a deleted pod against its
// backoff limit, so their pods (and pods without a controller) are not deleted.
func RecreatingOwner(pod *corev1.Pod) (*metav1.OwnerReference, bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return nil, false
	}
	switch {
	case owner.APIVersion == "apps/v1" && (owner.Kind == "ReplicaSet" || owner.Kind == "StatefulSet"),
		owner.APIVersion == "v1" && owner.Kind == "ReplicationController":
		return owner, true
	}
	return nil, false
}

// deleteForOwner deletes a reported pod so that its owner recreates it, at most once per owner
// per interval, and records a Warning Event on the owner. The deletion names the pod's UID, so a
// pod recreated under the same name (a StatefulSet's) is never deleted by mistake.
func (m *Monitor) deleteForOwner(ctx context.Context, pod *corev1.Pod, arch string) {
	log := ctrl.LoggerFrom(ctx)
	owner, ok := RecreatingOwner(pod)
	if !ok {
		log.V(1).Info("Pod not deleted: no ReplicaSet, StatefulSet or ReplicationController recreates it")
		return
	}
	if !m.deletions.claim(owner.UID) {
		m.metrics.deletions.WithLabelValues(pod.Namespace, resultSkipped).Inc()
		log.Info("Pod not deleted: its owner had a pod deleted within the interval", "owner", owner.Kind+"/"+owner.Name,
			"interval", m.deletions.interval)
		return
	}
	err := m.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		m.deletions.unclaim(owner.UID) // gone or replaced meanwhile: nothing was deleted
		return
	case err != nil:
		m.deletions.unclaim(owner.UID)
		log.Error(err, "Deleting a pod that failed with an exec format error")
		return
	}
	m.metrics.deletions.WithLabelValues(pod.Namespace, resultDeleted).Inc()
	ref := &corev1.ObjectReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Namespace: pod.Namespace, Name: owner.Name, UID: owner.UID}
	m.recorder.Eventf(ref, nil, corev1.EventTypeWarning, ReasonPodDeleted, "DeleteExecFormatErrorPod", "%s",
		fmt.Sprintf("Deleted pod %s: a container failed with an exec format error on node %s (%s); the %s recreates it, "+
			"placed where its images run. At most one pod of this %s is deleted every %s (execFormatErrorMonitor action DeletePod).",
			pod.Name, pod.Spec.NodeName, arch, owner.Kind, owner.Kind, m.deletions.interval))
	log.Info("Deleted a pod that failed with an exec format error, for its owner to recreate", "owner", owner.Kind+"/"+owner.Name)
}
