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

package operator

import (
	"context"
	"fmt"
	"hash"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/apidiscovery"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/mirrorsets"
)

// mirrorSetObjects are the cluster's ImageDigestMirrorSet and ImageTagMirrorSet objects, as
// read for one reconcile.
type mirrorSetObjects []mirrorsets.Set

// mirrorSetWatcher starts the metadata-only watch of a mirror set kind (controller.Controller's
// Watch, which may run after the controller started). Metadata is all the cache holds: any
// change re-renders the drop-in from objects read uncached.
type mirrorSetWatcher func(gvk schema.GroupVersionKind) error

// newMirrorSetWatcher watches gvk in c, enqueueing the singleton.
func newMirrorSetWatcher(c controller.Controller, informers cache.Cache) mirrorSetWatcher {
	return func(gvk schema.GroupVersionKind) error {
		return c.Watch(source.Kind[client.Object](informers, metadataObject(gvk), handler.EnqueueRequestsFromMapFunc(enqueueSingleton)))
	}
}

// readMirrorSets lists the mirror sets of every kind the apiserver serves, and makes sure a
// change to them re-runs the reconcile. Discovery is asked on every reconcile rather than once
// at start: the RESTMapper is lazy and re-discovers a group it does not know, so a cluster
// that installs the CRDs after the operator started (or removes them) is followed on the next
// reconcile (a change of the ClusterPodPlacementConfig, or the resync period) instead of never;
// on plain Kubernetes that costs a discovery request per kind and reconcile.
func (r *Reconciler) readMirrorSets(ctx context.Context) (mirrorSetObjects, error) {
	var objs mirrorSetObjects
	for _, gvk := range mirrorsets.Kinds() {
		served, err := apidiscovery.Served(r.client.RESTMapper(), gvk)
		if err != nil {
			return objs, err
		}
		if !served {
			continue
		}
		if err := r.watchMirrorSets(ctx, gvk); err != nil {
			return objs, err
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		switch err := r.uncached.List(ctx, list); {
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			continue // the CRD was removed since the RESTMapper learnt it
		case err != nil:
			return objs, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			objs = append(objs, mirrorsets.FromUnstructured(&list.Items[i]))
		}
	}
	return objs, nil
}

// watchMirrorSets starts the watch of gvk the first time it is served.
func (r *Reconciler) watchMirrorSets(ctx context.Context, gvk schema.GroupVersionKind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mirrorSetWatches[gvk.Kind] || r.watchMirrorSet == nil {
		return nil
	}
	if err := r.watchMirrorSet(gvk); err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	if r.mirrorSetWatches == nil {
		r.mirrorSetWatches = map[string]bool{}
	}
	r.mirrorSetWatches[gvk.Kind] = true
	logf.FromContext(ctx).Info("Watching mirror sets", "kind", gvk.Kind)
	return nil
}

// enqueueSingleton maps any object to the ClusterPodPlacementConfig singleton.
func enqueueSingleton(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: v1beta1.SingletonName}}}
}

// metadataObject is an empty PartialObjectMetadata of gvk, the type of a metadata-only watch.
func metadataObject(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// renderMirrorSets renders the drop-in, checks it together with the registries.conf it joins,
// and adds it to the linked objects' hash, so that a change rolls the controller.
func (st *linkedState) renderMirrorSets(objs mirrorSetObjects, h hash.Hash) error {
	if len(objs) == 0 {
		return nil
	}
	res, err := mirrorsets.Render(objs, mirrorsets.DefaultMaxMirrors)
	if err != nil {
		return err
	}
	st.mirrorSetProblems = res.Problems
	if res.Content == "" {
		return nil
	}
	if err := inspect.ValidateRegistriesConfWithDropIn([]byte(st.registriesConf), MirrorSetsKey, []byte(res.Content)); err != nil {
		st.invalid(fmt.Sprintf("the registries.conf drop-in rendered from %s: %v", strings.Join(res.InEffect, ", "), err))
		return nil
	}
	st.mirrorSets = res.Content
	st.configured = append(st.configured, strings.Join(res.InEffect, ", ")+" (mirror sets, drop-in "+MirrorSetsKey+")")
	fmt.Fprintf(h, "mirror-sets ")
	h.Write([]byte(res.Content))
	return nil
}
