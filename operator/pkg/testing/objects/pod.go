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

package objects

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// PodBuilder builds a test pod.
type PodBuilder struct{ pod *corev1.Pod }

// Pod starts a pod with only a namespace and a name: no labels, gates or containers.
func Pod(namespace, name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// InNamespace moves the pod to namespace ns.
func (b *PodBuilder) InNamespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// WithUID sets the pod's UID, which the API server would assign.
func (b *PodBuilder) WithUID(uid types.UID) *PodBuilder { b.pod.UID = uid; return b }

// WithImage appends one container per image, named c0, c1, … in order.
func (b *PodBuilder) WithImage(images ...string) *PodBuilder {
	for _, img := range images {
		name := fmt.Sprintf("c%d", len(b.pod.Spec.Containers))
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name, Image: img})
	}
	return b
}

// WithInitImage appends an init container running image, named init, init1, … in order.
func (b *PodBuilder) WithInitImage(image string) *PodBuilder {
	name := "init"
	if n := len(b.pod.Spec.InitContainers); n > 0 {
		name = fmt.Sprintf("init%d", n)
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, Image: image})
	return b
}

// WithGate leaves the pod as archgate's webhook does: archgate's scheduling gate appended
// and the gated label set.
func (b *PodBuilder) WithGate() *PodBuilder {
	b.pod.Spec.SchedulingGates = append(b.pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1beta1.SchedulingGateName})
	return b.WithLabel(v1beta1.LabelSchedulingGate, v1beta1.LabelValueGated)
}

// WithSchedulingGates replaces the pod's scheduling gates by the named ones (none: no gates).
func (b *PodBuilder) WithSchedulingGates(names ...string) *PodBuilder {
	b.pod.Spec.SchedulingGates = nil
	for _, n := range names {
		b.pod.Spec.SchedulingGates = append(b.pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
	}
	return b
}

// WithLabel sets one label.
func (b *PodBuilder) WithLabel(key, value string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[key] = value
	return b
}

// WithLabels replaces the pod's labels (the gated label included) by the key/value pairs
// kv; with none the pod has no labels.
func (b *PodBuilder) WithLabels(kv ...string) *PodBuilder {
	b.pod.Labels = nil
	for i := 0; i+1 < len(kv); i += 2 {
		b.WithLabel(kv[i], kv[i+1])
	}
	return b
}

// WithAffinity sets the pod's affinity.
func (b *PodBuilder) WithAffinity(a *corev1.Affinity) *PodBuilder { b.pod.Spec.Affinity = a; return b }

// WithPullSecrets appends image pull secrets by name.
func (b *PodBuilder) WithPullSecrets(names ...string) *PodBuilder {
	for _, n := range names {
		b.pod.Spec.ImagePullSecrets = append(b.pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	return b
}

// WithCreationTimestamp sets when the API server created the pod.
func (b *PodBuilder) WithCreationTimestamp(t time.Time) *PodBuilder {
	b.pod.CreationTimestamp = metav1.NewTime(t)
	return b
}

// WithNodeName binds the pod to node.
func (b *PodBuilder) WithNodeName(node string) *PodBuilder { b.pod.Spec.NodeName = node; return b }

// Build returns a copy of the pod built so far.
func (b *PodBuilder) Build() *corev1.Pod { return b.pod.DeepCopy() }
