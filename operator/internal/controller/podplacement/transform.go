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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// placementView keeps of a pod only what the controller reads or writes: the pod a reconcile
// works on, read from the apiserver, so that copying, diffing and encoding it for the patch does
// not touch status, volumes, env, probes or managed fields.
//
// It is safe for the one write the controller makes: the merge patch is the difference between
// this view and the same view with the gate removed, the affinity merged and the outcome
// recorded, so fields the view leaves out are never in the patch and stay as they are on the
// server. What is kept, and who reads it:
//   - metadata: name, namespace, UID and resourceVersion (identity, optimistic lock, Events),
//     labels (PodPlacementConfig selectors; the outcome label), annotations (the outcome
//     annotations are added to them), creation and deletion timestamps (gauges, deletion);
//   - spec: each container's and init container's name and image (the images to inspect),
//     imagePullSecrets (credentials), nodeSelector and affinity (the merge rules, user pins),
//     schedulingGates (the gate), nodeName and serviceAccountName (cheap, for logs).
func placementView(pod *corev1.Pod) *corev1.Pod {
	m := pod.ObjectMeta
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Labels: m.Labels, Annotations: m.Annotations,
			CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			Containers:         imagesOnly(pod.Spec.Containers),
			InitContainers:     imagesOnly(pod.Spec.InitContainers),
			ImagePullSecrets:   pod.Spec.ImagePullSecrets,
			NodeSelector:       pod.Spec.NodeSelector,
			Affinity:           pod.Spec.Affinity,
			SchedulingGates:    pod.Spec.SchedulingGates,
			NodeName:           pod.Spec.NodeName,
			ServiceAccountName: pod.Spec.ServiceAccountName,
		},
	}
	return out
}

func imagesOnly(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}

// transformPod is the cache transform of pods, which the controller watches as metadata only.
// It keeps what is read from the cache: identity and resourceVersion (readPod), creation and
// deletion timestamps (the gauges), archgate's own labels (the event handler, the gauges). A
// tenant's labels and annotations, up to 256 KiB per pod, would otherwise make the cache's
// size theirs to choose. Tombstones of deleted objects pass through.
func transformPod(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			Labels: archgateLabels(m.Labels),
		},
	}, nil
}

// archgateLabels returns the labels of archgate's API group, nil when there are none.
func archgateLabels(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		if strings.HasPrefix(k, v1beta1.GroupName+"/") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
