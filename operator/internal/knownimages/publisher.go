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
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/collectors"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
)

// DefaultPublishInterval is how often the publisher compares the cache with what it last wrote.
// A write happens only when the public results changed, so a warm cluster writes nothing; a new
// image reaches the webhook within about this long, and its pods are gated until then.
const DefaultPublishInterval = time.Second

// FieldManager is the field manager of the publisher's writes.
const FieldManager = "archgate-known-images"

// Source gives the results to publish, least recently used first (inspect.CachingInspector).
type Source interface {
	KnownImages(identities func(ref string) []credentials.Identity) []inspect.KnownImage
	// Changes moves whenever the results may have changed.
	Changes() uint64
}

// refreshEvery bounds how long an unchanged cache goes without the publication being computed
// again: the global pull secret can change which results a pod without imagePullSecrets is
// served without any cache entry changing, and expired entries should leave the document.
const refreshEvery = 30 * time.Second

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	// Client writes the ConfigMap's data (writeData); the operator creates the ConfigMap and owns
	// its metadata (labels, owner), which the publisher leaves as they are.
	Client client.Client
	// Key names the ConfigMap.
	Key types.NamespacedName
	// Source is the controller's cache.
	Source Source
	// GlobalKeyring returns the global pull secret's keyring; nil without a global pull secret.
	// A pod without imagePullSecrets is inspected with the global pull secret's credentials for
	// the registries it covers, anonymously elsewhere: the entries published are those such a
	// pod would be served.
	GlobalKeyring func(context.Context) (*credentials.Keyring, error)
	// Interval is DefaultPublishInterval when zero; MaxBytes is MaxDataBytes when zero.
	Interval time.Duration
	MaxBytes int
	Log      logr.Logger
	// Metrics receives the publisher's metrics; fresh, unregistered ones when nil.
	Metrics *PublisherMetrics
	// Parameters, when set, names the ConfigMap (in Key's namespace) where the publisher also
	// writes the admission policy's params: the same entries in every form pods write them,
	// and the namespaces with PodPlacementConfigs, listed through Configs (a cached reader).
	// The operator creates it; only its data is applied.
	Parameters string
	Configs    client.Reader
}

// Publisher writes the controller's public results into the ConfigMap the webhook watches. It
// runs on the leader only: the standby's cache is cold.
type Publisher struct {
	opts PublisherOptions
	last []byte
	// lastChanges and lastComputed skip ticks on which the cache did not change: encoding
	// thousands of entries every second on an idle cluster is work for nothing.
	lastChanges  uint64
	lastComputed time.Time
	// paramImages are the params' image entries for the last document's entries, encoded when
	// the document changes (not every tick); paramsDirty is set until they are written.
	paramImages map[string]string
	paramsDirty bool
	// paramNamespaces are the namespace entries last written, and paramsAt when the params were
	// last applied: they are applied again after refreshEvery even when unchanged, so that a
	// ConfigMap recreated empty (the operator re-creating it, an admin's edit) is filled again.
	paramNamespaces map[string]string
	paramsAt        time.Time
}

var _ manager.LeaderElectionRunnable = (*Publisher)(nil)

// NewPublisher returns a publisher; add it to the controller's manager.
func NewPublisher(opts PublisherOptions) *Publisher {
	opts.Interval = cmp.Or(opts.Interval, DefaultPublishInterval)
	opts.MaxBytes = cmp.Or(opts.MaxBytes, MaxDataBytes)
	if opts.Metrics == nil {
		opts.Metrics = NewPublisherMetrics()
	}
	return &Publisher{opts: opts}
}

// NeedLeaderElection is true: one writer, the replica whose cache is warm.
func (p *Publisher) NeedLeaderElection() bool { return true }

// Start publishes every Interval until ctx ends. A failed write is logged and tried again at the
// next tick; it never stops the controller (the webhook then gates pods, as without publishing).
func (p *Publisher) Start(ctx context.Context) error {
	t := time.NewTicker(p.opts.Interval)
	defer t.Stop()
	for {
		if err := p.Publish(ctx); err != nil && ctx.Err() == nil {
			p.opts.Log.Error(err, "Failed to publish the known images, retrying", "configMap", p.opts.Key)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Publish writes the current public results when they differ from the last ones written, and
// the PlacementParameters when they do.
func (p *Publisher) Publish(ctx context.Context) error {
	if err := p.publishDocument(ctx); err != nil {
		return err
	}
	if p.opts.Parameters == "" {
		return nil
	}
	return p.publishParameters(ctx)
}

func (p *Publisher) publishDocument(ctx context.Context) error {
	changes, now := p.opts.Source.Changes(), time.Now()
	if p.last != nil && changes == p.lastChanges && now.Sub(p.lastComputed) < refreshEvery {
		return nil
	}
	entries, err := p.publishable(ctx)
	if err != nil {
		return err
	}
	data, kept, err := Encode(entries, p.opts.MaxBytes)
	if err != nil {
		return err
	}
	if bytes.Equal(data, p.last) {
		p.lastChanges, p.lastComputed = changes, now
		return nil
	}
	if p.opts.Parameters != "" {
		if p.paramImages, _, err = EncodeParameters(entries[len(entries)-kept:], p.opts.MaxBytes); err != nil {
			return err
		}
		p.paramsDirty = true
	}
	if err := p.writeData(ctx, p.opts.Key, map[string]string{DataKey: string(data)}); err != nil {
		p.opts.Metrics.writes.WithLabelValues("error").Inc()
		return err
	}
	p.opts.Metrics.writes.WithLabelValues("success").Inc()
	p.opts.Metrics.entries.Set(float64(kept))
	p.last, p.lastChanges, p.lastComputed = data, changes, now
	return nil
}

// publishParameters writes the params when their content changed: the images of the document,
// and the namespaces with PodPlacementConfigs (read from the cache every tick, as a new
// configuration must reach the policy within the interval).
func (p *Publisher) publishParameters(ctx context.Context) error {
	configs := &v1beta1.PodPlacementConfigList{}
	if err := p.opts.Configs.List(ctx, configs); err != nil {
		return fmt.Errorf("listing PodPlacementConfigs: %w", err)
	}
	counts := map[string]int{}
	for _, c := range configs.Items {
		counts[c.Namespace]++
	}
	namespaces := make(map[string]string, len(counts))
	for ns, n := range counts {
		namespaces[NamespaceKey(ns)] = strconv.Itoa(n)
	}
	if !p.paramsDirty && maps.Equal(namespaces, p.paramNamespaces) && time.Since(p.paramsAt) < refreshEvery {
		return nil
	}
	data := maps.Clone(p.paramImages)
	if data == nil {
		data = map[string]string{}
	}
	maps.Copy(data, namespaces)
	key := types.NamespacedName{Namespace: p.opts.Key.Namespace, Name: p.opts.Parameters}
	if err := p.writeData(ctx, key, data); err != nil {
		p.opts.Metrics.paramWrites.WithLabelValues("error").Inc()
		return err
	}
	p.opts.Metrics.paramWrites.WithLabelValues("success").Inc()
	p.paramNamespaces, p.paramsAt, p.paramsDirty = namespaces, time.Now(), false
	return nil
}

// writeData replaces the data of the ConfigMap key with data, and nothing else of it, in one JSON
// patch ("add" replaces a member that exists); a missing ConfigMap is created with data (where
// the controller may create it: the operator creates it for a deployed controller, whose role
// lets it patch and not create). Not a server-side apply: with a hundred params keys,
// kube-apiserver allocates about three times as much for an apply of the same data (its managed
// fields track every key) and spends about twice the CPU (measured on a real apiserver over 100
// writes of 1 to 121 keys: 760–780 against 256–260 KiB, 3.2–3.4 against 1.6–1.7 ms), and the
// publisher writes every second while new images arrive.
func (p *Publisher) writeData(ctx context.Context, key types.NamespacedName, data map[string]string) error {
	patch, err := json.Marshal([]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/data", data)})
	if err != nil {
		return fmt.Errorf("encoding the data of ConfigMap %s: %w", key, err)
	}
	meta := metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
	err = p.opts.Client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: meta}, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldManager))
	if apierrors.IsNotFound(err) {
		err = p.opts.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: data}, client.FieldOwner(FieldManager))
	}
	if err != nil {
		return fmt.Errorf("writing the data of ConfigMap %s: %w", key, err)
	}
	return nil
}

// publishable returns the results a pod without imagePullSecrets would be placed with.
func (p *Publisher) publishable(ctx context.Context) ([]inspect.KnownImage, error) {
	keyring := credentials.NewKeyring(nil)
	if p.opts.GlobalKeyring != nil {
		var err error
		if keyring, err = p.opts.GlobalKeyring(ctx); err != nil {
			return nil, fmt.Errorf("reading the global pull secret: %w", err)
		}
		if keyring == nil {
			keyring = credentials.NewKeyring(nil)
		}
	}
	return p.opts.Source.KnownImages(func(ref string) []credentials.Identity {
		creds, err := keyring.Lookup(ref)
		if err != nil {
			return nil
		}
		return creds.Identities()
	}), nil
}

// PublisherMetrics are the publisher's Prometheus collectors.
type PublisherMetrics struct {
	writes      *prometheus.CounterVec
	entries     prometheus.Gauge
	paramWrites *prometheus.CounterVec
}

// NewPublisherMetrics returns unregistered metrics.
func NewPublisherMetrics() *PublisherMetrics {
	return &PublisherMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_known_images_writes_total",
			Help: "Writes of the known-images ConfigMap the webhook places pods from, by result (success, error).",
		}, []string{"result"}),
		entries: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "archgate_placement_known_images",
			Help: "Images in the known-images ConfigMap at its last write.",
		}),
		paramWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "archgate_placement_parameters_writes_total",
			Help: "Writes of the ConfigMap of the admission policy's params, by result (success, error).",
		}, []string{"result"}),
	}
}

// Register registers the collectors with reg; it returns the errors of those that failed, joined.
func (m *PublisherMetrics) Register(reg prometheus.Registerer) error {
	return collectors.Register(reg, m.writes, m.entries, m.paramWrites)
}
