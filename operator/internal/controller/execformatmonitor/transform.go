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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/execformat"
)

// monitorView keeps of a pod only what detection needs, so that the monitor's cache, which
// holds every pod of the cluster, grows by a few hundred bytes per healthy pod instead of the
// whole object (measured in TestMonitorViewMemory):
//   - metadata: name, namespace, UID, resourceVersion (identity, Events), of the labels
//     only LabelExecFormatError (already reported or not), and for a pod that shows an exec
//     format error its controller's owner reference (the action DeletePod);
//   - spec.nodeName (the node's architecture for the metric and the Event);
//   - status: only the container statuses that show an exec format error (execformat.Match),
//     with their name and states. A healthy pod keeps none, so the match runs here once per
//     update and the reconciler sees only pods to report.
func monitorView(pod *corev1.Pod) *corev1.Pod {
	m := pod.ObjectMeta
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		},
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{
			InitContainerStatuses: matchingStatuses(pod.Status.InitContainerStatuses),
			ContainerStatuses:     matchingStatuses(pod.Status.ContainerStatuses),
		},
	}
	if v, ok := m.Labels[v1beta1.LabelExecFormatError]; ok {
		out.Labels = map[string]string{v1beta1.LabelExecFormatError: v}
	}
	if owner := metav1.GetControllerOf(pod); owner != nil && (out.Status.InitContainerStatuses != nil || out.Status.ContainerStatuses != nil) {
		out.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return out
}

// matchingStatuses returns the statuses that show an exec format error, reduced to their name
// and states; nil when none does.
func matchingStatuses(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range statuses {
		if _, ok := execformat.Match(s); ok {
			out = append(out, corev1.ContainerStatus{Name: s.Name, State: s.State, LastTerminationState: s.LastTerminationState})
		}
	}
	return out
}

// transformPod is the cache transform of the monitor's pods: the monitor view of a pod,
// anything else as it came (tombstones of deleted objects pass through).
func transformPod(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return monitorView(pod), nil
	}
	return obj, nil
}

// needsReport reports whether the pod (a monitor view) shows an exec format error and has not
// been reported yet.
func needsReport(pod *corev1.Pod) bool {
	if pod.Labels[v1beta1.LabelExecFormatError] == v1beta1.LabelValueTrue {
		return false
	}
	_, found := execformat.FirstFinding(&pod.Status)
	return found
}
