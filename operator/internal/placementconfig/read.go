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

// Package placementconfig reads the configurations a pod's placement follows, the
// ClusterPodPlacementConfig and its namespace's PodPlacementConfigs, alike for the webhook, the
// controllers and the validators: a cluster without the CRDs, or without the singleton, has
// no configuration rather than an error.
package placementconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Cluster reads the ClusterPodPlacementConfig: nil when there is none.
func Cluster(ctx context.Context, r client.Reader) (*v1beta1.ClusterPodPlacementConfig, error) {
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	switch err := r.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cppc); {
	case err == nil:
		return cppc, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("reading the ClusterPodPlacementConfig: %w", err)
	}
}

// Namespace lists the PodPlacementConfigs of namespace. From a cache they are not copied (every
// admission and reconcile reads them): callers must not modify them.
func Namespace(ctx context.Context, r client.Reader, namespace string) ([]v1beta1.PodPlacementConfig, error) {
	configs := &v1beta1.PodPlacementConfigList{}
	if err := r.List(ctx, configs, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing the PodPlacementConfigs of namespace %s: %w", namespace, err)
	}
	return configs.Items, nil
}
