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

package knownimages

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/internal/inspect"
)

// Store holds the webhook's view of the published ConfigMap: the Index parsed once per version,
// swapped atomically, so that an admission reads it without a lock or a copy. The zero value
// knows nothing. Safe for concurrent use.
type Store struct {
	key   types.NamespacedName
	log   logr.Logger
	index atomic.Pointer[Index]
}

// NewStore returns an empty store for the ConfigMap key.
func NewStore(key types.NamespacedName, log logr.Logger) *Store {
	return &Store{key: key, log: log}
}

// CacheByObject restricts a manager's ConfigMap cache to the published ConfigMap.
func (s *Store) CacheByObject() (client.Object, cache.ByObject) {
	return &corev1.ConfigMap{}, cache.ByObject{
		Namespaces: map[string]cache.Config{s.key.Namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", s.key.Name),
	}
}

// Watch keeps the store in step with the ConfigMap through the informers' ConfigMap informer,
// which must be restricted by CacheByObject.
func (s *Store) Watch(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watching ConfigMap %s: %w", s.key, err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.set(obj) },
		UpdateFunc: func(_, obj any) { s.set(obj) },
		DeleteFunc: func(any) { s.index.Store(nil) },
	})
	if err != nil {
		return fmt.Errorf("watching ConfigMap %s: %w", s.key, err)
	}
	return nil
}

func (s *Store) set(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm.Namespace != s.key.Namespace || cm.Name != s.key.Name {
		return
	}
	s.Set(cm)
}

// Set replaces the index with the content of cm. An invalid document empties the store (pods are
// then gated, as without it) and is logged with the object and key.
func (s *Store) Set(cm *corev1.ConfigMap) {
	ix, err := Parse(cm.Data[DataKey])
	if err != nil {
		s.log.Error(err, "Ignoring the known images: invalid ConfigMap", "configMap", s.key, "resourceVersion", cm.ResourceVersion)
		s.index.Store(nil)
		return
	}
	s.index.Store(ix)
	s.log.V(4).Info("Known images updated", "images", ix.Len(), "resourceVersion", cm.ResourceVersion)
}

// Lookup returns the result for image when it is known and live at now.
func (s *Store) Lookup(image string, now time.Time) (inspect.Result, bool) {
	return s.index.Load().Lookup(image, now)
}
