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
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DeploymentBuilder builds a test Deployment, its status included: tests of code that
// reads a Deployment's rollout write the status the Deployment controller would.
type DeploymentBuilder struct{ d *appsv1.Deployment }

// Deployment starts a Deployment with only a namespace and a name.
func Deployment(namespace, name string) *DeploymentBuilder {
	return &DeploymentBuilder{d: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// WithGeneration sets the generation the API server would have counted.
func (b *DeploymentBuilder) WithGeneration(g int64) *DeploymentBuilder { b.d.Generation = g; return b }

// WithReplicas asks for n pods, none of them available yet (status: n replicas, n
// unavailable).
func (b *DeploymentBuilder) WithReplicas(n int32) *DeploymentBuilder {
	b.d.Spec.Replicas = ptr.To(n)
	b.d.Status.Replicas, b.d.Status.UnavailableReplicas = n, n
	return b
}

// WithObservedGeneration sets the generation the Deployment controller has seen.
func (b *DeploymentBuilder) WithObservedGeneration(g int64) *DeploymentBuilder {
	b.d.Status.ObservedGeneration = g
	return b
}

// WithUpdatedReplicas sets how many pods run the current template.
func (b *DeploymentBuilder) WithUpdatedReplicas(n int32) *DeploymentBuilder {
	b.d.Status.UpdatedReplicas = n
	return b
}

// WithAvailableReplicas sets how many pods are available; the rest of the status replicas
// are unavailable.
func (b *DeploymentBuilder) WithAvailableReplicas(n int32) *DeploymentBuilder {
	b.d.Status.AvailableReplicas, b.d.Status.UnavailableReplicas = n, b.d.Status.Replicas-n
	return b
}

// WithConditions replaces the status conditions.
func (b *DeploymentBuilder) WithConditions(c ...appsv1.DeploymentCondition) *DeploymentBuilder {
	b.d.Status.Conditions = c
	return b
}

// Build returns a copy of the Deployment built so far.
func (b *DeploymentBuilder) Build() *appsv1.Deployment { return b.d.DeepCopy() }
