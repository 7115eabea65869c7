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
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/placement"
	"github.com/archgate/archgate/operator/internal/placementconfig"
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
	// ConfigsErr names the PodPlacementConfigs left out because their label selector is
	// invalid (the controller ignores them too).
	ConfigsErr error
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
	if cluster, err := placementconfig.Cluster(ctx, c); err == nil {
		f.Cluster = cluster
	}
	configs := &v1beta1.PodPlacementConfigList{}
	if err := c.List(ctx, configs, client.InNamespace(key.Namespace)); err == nil {
		f.Configs, f.ConfigsErr = placement.SelectConfigs(f.Pod, configs.Items)
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

// inspectImages inspects the pod's images as the pod placement controller does — the same
// image references (placement.PodImages: trimmed, de-duplicated) with the same credentials
// (podplacement.LoadKeyring) — and returns what the controller would have logged about the
// credentials, if anything.
func inspectImages(ctx context.Context, c client.Reader, f *Facts, opts Options) string {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var notes []string
	// The controller's own log lines about the secrets it skips are the note.
	log := funcr.New(func(_, args string) { notes = append(notes, args) }, funcr.Options{Verbosity: 1})
	var global *types.NamespacedName
	if f.Cluster != nil {
		global = f.Cluster.Spec.GlobalPullSecretRef.NamespacedName(opts.OperatorNamespace)
	}
	keyring, err := podplacement.LoadKeyring(ctx, c, f.Pod, global, log)
	if err != nil {
		notes = append(notes, err.Error())
		keyring = credentials.NewKeyring(nil)
	}

	images := placement.PodImages(&f.Pod.Spec)
	results := make([]Image, len(images))
	var wg sync.WaitGroup
	for i, ref := range images {
		wg.Go(func() {
			creds, err := keyring.Lookup(ref)
			if err != nil {
				results[i].Err = err
				return
			}
			results[i].Result, results[i].Err = opts.Inspector.Architectures(ctx, ref, creds)
		})
	}
	wg.Wait()
	for i := range f.Images {
		img := &f.Images[i]
		at := slices.Index(images, placement.ContainerImage(corev1.Container{Image: img.Ref}))
		if at < 0 {
			img.Err = errors.New("no image reference: nothing to inspect")
			continue
		}
		img.Result, img.Err = results[at].Result, results[at].Err
	}
	return strings.Join(notes, "; ")
}

// Compatible returns the architectures every inspected image supports (placement.Intersect,
// the controller's rule; every supported architecture when all images run anywhere), and
// whether every image was inspected successfully.
func (f Facts) Compatible() (archs []string, complete bool) {
	complete = f.Inspected
	var results []placement.ImageArchitectures
	for _, img := range f.Images {
		if img.Err != nil || !f.Inspected {
			complete = false
			continue
		}
		results = append(results, img.Result.Placement())
	}
	set, anyArch := placement.Intersect(results)
	if anyArch {
		return v1beta1.SupportedArchitectures(), complete
	}
	return sets.List(set), complete
}
