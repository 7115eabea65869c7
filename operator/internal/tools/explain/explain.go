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

// Package explain tells an administrator what archgate did to one pod and why: whether its
// namespace is selected, the webhook's decision, the images and the architectures they
// support, the node affinity archgate set, the labels and annotations it wrote, the matching
// PodPlacementConfigs and the anomalies it reported. Gather reads the facts; Render, a pure
// function, writes the explanation.
package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
)

// Facts is everything the explanation is made of.
type Facts struct {
	// Pod is the pod explained.
	Pod *corev1.Pod
	// Namespace is the pod's namespace; nil when it could not be read.
	Namespace *corev1.Namespace
	// Node is the node the pod is bound to, nil when unbound or unreadable.
	Node *corev1.Node
	// Cluster is the ClusterPodPlacementConfig, nil when there is none.
	Cluster *v1beta1.ClusterPodPlacementConfig
	// OperatorNamespace is the namespace archgate runs in.
	OperatorNamespace string
	// Configs are the PodPlacementConfigs that apply to the pod, highest priority first.
	Configs []*v1beta1.PodPlacementConfig
	// Images are the pod's containers and what inspection found, in pod order.
	Images []Image
	// Inspected is false when inspection was not attempted (disabled).
	Inspected bool
	// CredentialsNote says which credentials inspection could not read, if any.
	CredentialsNote string
	// Events are the Events about the pod.
	Events []corev1.Event
}

// Image is one container's image and what inspection found.
type Image struct {
	// Container names the container; Init marks init containers.
	Container string
	Init      bool
	// Ref is the image reference.
	Ref string
	// Result is the inspection result when Err is nil.
	Result inspect.Result
	// Err is the inspection error.
	Err error
}

// Options configures Gather.
type Options struct {
	// Inspector inspects the images; nil skips inspection.
	Inspector inspect.Inspector
	// OperatorNamespace is archgate's namespace, the default namespace of the global pull
	// secret reference.
	OperatorNamespace string
	// Timeout bounds the inspection of all images; 30s when zero.
	Timeout time.Duration
}

// Gather reads the facts about the pod key. Only the pod must be readable; everything else
// is best effort, and what could not be read is left out.
func Gather(ctx context.Context, c client.Reader, key types.NamespacedName, opts Options) (Facts, error) {
	f := Facts{Pod: &corev1.Pod{}, OperatorNamespace: opts.OperatorNamespace}
	if err := c.Get(ctx, key, f.Pod); err != nil {
		return f, fmt.Errorf("reading pod %s: %w", key, err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: key.Namespace}, ns); err == nil {
		f.Namespace = ns
	}
	if f.Pod.Spec.NodeName != "" {
		node := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: f.Pod.Spec.NodeName}, node); err == nil {
			f.Node = node
		}
	}
	cluster := &v1beta1.ClusterPodPlacementConfig{}
	if err := c.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cluster); err == nil {
		f.Cluster = cluster
	}
	configs := &v1beta1.PodPlacementConfigList{}
	if err := c.List(ctx, configs, client.InNamespace(key.Namespace)); err == nil {
		f.Configs, _ = placement.SelectConfigs(f.Pod, configs.Items)
	}
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(key.Namespace), client.MatchingFields{"involvedObject.name": key.Name}); err == nil {
		f.Events = events.Items
		sort.SliceStable(f.Events, func(i, j int) bool { return eventTime(f.Events[i]).Before(eventTime(f.Events[j])) })
	}
	for _, ctr := range f.Pod.Spec.InitContainers {
		f.Images = append(f.Images, Image{Container: ctr.Name, Init: true, Ref: ctr.Image})
	}
	for _, ctr := range f.Pod.Spec.Containers {
		f.Images = append(f.Images, Image{Container: ctr.Name, Ref: ctr.Image})
	}
	if opts.Inspector != nil {
		f.Inspected = true
		f.CredentialsNote = inspectImages(ctx, c, &f, opts)
	}
	return f, nil
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// inspectImages inspects every image concurrently with the credentials the pod placement
// controller would use, and returns a note about credentials it could not read.
func inspectImages(ctx context.Context, c client.Reader, f *Facts, opts Options) string {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var notes []error
	var global *corev1.Secret
	if f.Cluster != nil && f.Cluster.Spec.GlobalPullSecretRef != nil {
		ref := f.Cluster.Spec.GlobalPullSecretRef
		ns := ref.Namespace
		if ns == "" {
			ns = opts.OperatorNamespace
		}
		s := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, s); err != nil {
			notes = append(notes, fmt.Errorf("global pull secret %s/%s: %w", ns, ref.Name, err))
		} else {
			global = s
		}
	}
	var podSecrets []*corev1.Secret
	for _, ref := range f.Pod.Spec.ImagePullSecrets {
		s := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: f.Pod.Namespace, Name: ref.Name}, s); err != nil {
			if !apierrors.IsNotFound(err) {
				notes = append(notes, fmt.Errorf("imagePullSecret %s: %w", ref.Name, err))
			}
			continue
		}
		podSecrets = append(podSecrets, s)
	}
	keyring, err := credentials.KeyringFromSecrets(global, podSecrets)
	if err != nil {
		notes = append(notes, err)
		keyring = credentials.NewKeyring(nil)
	}

	var wg sync.WaitGroup
	for i := range f.Images {
		img := &f.Images[i]
		wg.Go(func() {
			creds, err := keyring.Lookup(img.Ref)
			if err != nil {
				img.Err = err
				return
			}
			img.Result, img.Err = opts.Inspector.Architectures(ctx, img.Ref, creds)
		})
	}
	wg.Wait()
	if len(notes) > 0 {
		return errors.Join(notes...).Error()
	}
	return ""
}

// Compatible returns the architectures every inspected image supports, and whether every
// image was inspected successfully.
func (f Facts) Compatible() (archs []string, complete bool) {
	var set sets.Set[string]
	complete = f.Inspected
	for _, img := range f.Images {
		if img.Err != nil || !f.Inspected {
			complete = false
			continue
		}
		if img.Result.AnyArchitecture {
			continue
		}
		s := sets.New(img.Result.Architectures...)
		if set == nil {
			set = s
		} else {
			set = set.Intersection(s)
		}
	}
	if set == nil {
		return v1beta1.SupportedArchitectures(), complete
	}
	out := sets.List(set)
	slices.Sort(out)
	return out, complete
}
