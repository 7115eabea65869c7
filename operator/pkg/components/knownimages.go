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

package components

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/knownimages"
	gatewebhook "github.com/archgate/archgate/operator/internal/webhook"
)

// DefaultKnownImagesConfigMap is the ConfigMap the operator renders into both components'
// --known-images-configmap when spec.admissionPlacement is Enabled.
const DefaultKnownImagesConfigMap = knownimages.DefaultConfigMapName

// DefaultPlacementParametersConfigMap is the ConfigMap the operator renders into the
// controller's --placement-parameters-configmap when the admission policy is in effect.
const DefaultPlacementParametersConfigMap = knownimages.DefaultParametersConfigMapName

// AdmissionPolicyParameters returns the params ConfigMap's data the controller publishes for
// images (reference → architectures), for tests that install the admission policy without the
// controller.
func AdmissionPolicyParameters(images map[string][]string) map[string]string {
	entries := make([]inspect.KnownImage, 0, len(images))
	for ref, archs := range images {
		entries = append(entries, inspect.KnownImage{Ref: ref, Architectures: archs})
	}
	return knownimages.ImageParameters(entries)
}

// addKnownImagesPublisher adds the publisher of the cache's results for pods without imagePullSecrets to the
// controller's manager, when opts names a known-images ConfigMap and the cache is on
// (publishesKnownImages), recording into metrics (registered by the caller).
func addKnownImagesPublisher(mgr manager.Manager, opts ControllerOptions, source knownimages.Source,
	globalKeyring func(context.Context) (*credentials.Keyring, error), metrics *knownimages.PublisherMetrics) error {
	if !opts.publishesKnownImages() || source == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: opts.OperatorNamespace, Name: opts.KnownImagesConfigMap}
	var keyring func(context.Context) (*credentials.Keyring, error)
	if opts.GlobalPullSecret != nil {
		keyring = globalKeyring
	}
	p := knownimages.NewPublisher(knownimages.PublisherOptions{
		Client: mgr.GetClient(), Key: key, Source: source, GlobalKeyring: keyring,
		Log: opts.Logger.WithName("known-images"), Metrics: metrics,
		Parameters: opts.PlacementParametersConfigMap, Configs: mgr.GetClient(),
	})
	if err := mgr.Add(p); err != nil {
		return fmt.Errorf("adding the known-images publisher: %w", err)
	}
	return nil
}

// admissionPlacement is what the webhook needs to place pods at admission: the store of the
// published images and the cached reader of the placement configurations. Nil without
// WebhookOptions.KnownImagesConfigMap.
type admissionPlacement struct {
	store *knownimages.Store
}

func newAdmissionPlacement(opts WebhookOptions) *admissionPlacement {
	if opts.KnownImagesConfigMap == "" {
		return nil
	}
	key := types.NamespacedName{Namespace: opts.OperatorNamespace, Name: opts.KnownImagesConfigMap}
	return &admissionPlacement{store: knownimages.NewStore(key, opts.Logger.WithName("known-images"))}
}

// cacheOptions restricts the webhook's ConfigMap informer to the published ConfigMap; the
// placement configurations are cached whole (there are few).
func (a *admissionPlacement) cacheOptions() cache.Options {
	if a == nil {
		return cache.Options{}
	}
	obj, by := a.store.CacheByObject()
	return cache.Options{ByObject: map[client.Object]cache.ByObject{obj: by}, DefaultTransform: cache.TransformStripManagedFields()}
}

// setUp starts the informers with the manager, so that the first admission finds them synced,
// and returns the handler options.
func (a *admissionPlacement) setUp(ctx context.Context, mgr manager.Manager, o gatewebhook.Options) (gatewebhook.Options, error) {
	if a == nil {
		return o, nil
	}
	if err := a.store.Watch(ctx, mgr.GetCache()); err != nil {
		return o, err
	}
	for _, obj := range []client.Object{&v1beta1.ClusterPodPlacementConfig{}, &v1beta1.PodPlacementConfig{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return o, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	o.Known, o.Configs = a.store, mgr.GetClient()
	return o, nil
}

// ready reports whether the informers have synced: before that, every pod would be gated.
func (a *admissionPlacement) ready(mgr manager.Manager) error {
	if a == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("placement caches not synced")
	}
	return nil
}
