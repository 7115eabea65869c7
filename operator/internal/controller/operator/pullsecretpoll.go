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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// pullSecretPollPeriod is how often the operator reads the metadata of a global pull secret
// that lives outside its namespace: a GET by name, where a watch would need list and watch on
// the Secrets of that namespace (openshift-config on OpenShift), which the operator does not
// hold. A change there reaches the components within this period.
const pullSecretPollPeriod = 15 * time.Second

// pullSecretPoller notices when the global pull secret outside the operator's namespace
// appears, changes or goes, and then sends the ClusterPodPlacementConfig on events for the
// reconciler; inside the operator's namespace the cache's watch does that. A manager Runnable,
// on the leader only.
type pullSecretPoller struct {
	cached, uncached client.Reader
	namespace        string
	platform         v1beta1.Platform
	period           time.Duration
	events           chan event.GenericEvent
	// last is the secret and its state ("uid/resourceVersion", or "missing") at the last poll;
	// empty before the first one.
	last string
}

func newPullSecretPoller(cached, uncached client.Reader, namespace string, platform v1beta1.Platform) *pullSecretPoller {
	return &pullSecretPoller{cached: cached, uncached: uncached, namespace: namespace, platform: platform,
		period: pullSecretPollPeriod, events: make(chan event.GenericEvent, 1)}
}

// Start polls until ctx ends.
func (p *pullSecretPoller) Start(ctx context.Context) error {
	t := time.NewTicker(p.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			p.poll(ctx)
		}
	}
}

// NeedLeaderElection: only the leader reconciles.
func (p *pullSecretPoller) NeedLeaderElection() bool { return true }

func (p *pullSecretPoller) poll(ctx context.Context) {
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	if err := p.cached.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cppc); err != nil {
		return // none, or not readable now: nothing to tell
	}
	key, _ := cppc.Spec.GlobalPullSecret(p.platform, p.namespace)
	if key.Namespace == p.namespace {
		p.last = "" // watched
		return
	}
	state, err := p.read(ctx, key)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Reading the global pull secret's metadata", "secret", key.String())
		return
	}
	if now := key.String() + " " + state; now != p.last {
		if p.last != "" {
			select { // one pending event is enough: the reconcile reads everything again
			case p.events <- event.GenericEvent{Object: cppc}:
			default:
			}
		}
		p.last = now
	}
}

// read returns the secret's "uid/resourceVersion", or "missing".
func (p *pullSecretPoller) read(ctx context.Context, key types.NamespacedName) (string, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	switch err := p.uncached.Get(ctx, key, m); {
	case apierrors.IsNotFound(err):
		return "missing", nil
	case err != nil:
		return "", err
	}
	return string(m.UID) + "/" + m.ResourceVersion, nil
}
