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

package podplacement

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/golang-lru/v2/expirable"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/archgate/archgate/operator/internal/credentials"
)

// Invalidator drops cached inspection results read with the given credential identities
// (inspect.CachingInspector does).
type Invalidator interface {
	Invalidate(ids ...credentials.Identity) int
}

// globalPullSecretRefresh is how long the controller uses the global pull secret it read before
// it reads it again, by name, when a pod needs it. A watch would tell it sooner, but it needs
// list and watch on Secrets, which the operator would have to hold for the secret's namespace
// to grant them; a GET needs only the get the controller holds anyway (for the pods'
// imagePullSecrets). A rotated secret is in use within this period.
const globalPullSecretRefresh = 10 * time.Second

// globalPullSecret keeps the parsed global pull secret, read with uncached GETs at most every
// globalPullSecretRefresh, and invalidates what was cached under credentials it no longer holds
// when it changed or disappeared. Safe for concurrent use.
type globalPullSecret struct {
	key         types.NamespacedName
	reader      client.Reader
	invalidator Invalidator // nil: nothing to invalidate
	clock       clock.PassiveClock

	mu     sync.Mutex
	readAt time.Time           // zero: never read
	cfg    *credentials.Config // nil: no (usable) global pull secret
}

// Config returns the current global pull secret, nil when there is none or it cannot be parsed.
// It reads the secret again once the last read is globalPullSecretRefresh old; a failed
// re-read keeps the last one (and is tried again at the next call), only a failed first read is
// an error.
func (g *globalPullSecret) Config(ctx context.Context) (*credentials.Config, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	loaded := !g.readAt.IsZero()
	if loaded && now.Sub(g.readAt) < globalPullSecretRefresh {
		return g.cfg, nil
	}
	cfg, err := g.read(ctx)
	switch {
	case err != nil && loaded:
		logf.FromContext(ctx).Error(err, "Global pull secret not read again, using the last one", "secret", g.key.String())
		return g.cfg, nil
	case err != nil:
		return nil, err
	}
	before := g.cfg
	g.cfg, g.readAt = cfg, now
	if loaded && before != nil && g.invalidator != nil {
		after := credentials.Config{}
		if cfg != nil {
			after = *cfg
		}
		if stale := credentials.StaleIdentities(*before, after); len(stale) > 0 {
			n := g.invalidator.Invalidate(stale...)
			logf.FromContext(ctx).Info("Global pull secret changed, cached inspections invalidated",
				"secret", g.key.String(), "staleCredentials", len(stale), "entriesRemoved", n)
		}
	}
	return cfg, nil
}

// read fetches and parses the secret. A missing or unparsable secret means no global
// credentials: pods are inspected with their own pull secrets only.
func (g *globalPullSecret) read(ctx context.Context) (*credentials.Config, error) {
	secret := &corev1.Secret{}
	if err := g.reader.Get(quietContext(ctx), g.key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			logf.FromContext(ctx).V(1).Info("Global pull secret not found, inspecting without it", "secret", g.key.String())
			return nil, nil
		}
		return nil, fmt.Errorf("reading global pull secret %s: %w", g.key, err)
	}
	cfg, err := credentials.ParseSecret(secret, true)
	if err != nil {
		// ParseErrors never carry secret values.
		logf.FromContext(ctx).Error(err, "Global pull secret unusable, inspecting without it", "secret", g.key.String())
		return nil, nil
	}
	return &cfg, nil
}

// podSecrets reads the pods' imagePullSecrets with uncached GETs (the API reader) behind a small
// LRU with a short TTL, keyed by namespace/name.
//
// Why not the manager's cache: an informer on secrets would hold every secret of the cluster
// (service-account tokens, TLS keys, Helm releases — often the largest objects there) in the
// controller's memory and need list/watch on all of them; a GET needs only "get". The TTL
// cache turns the GETs of a burst of pods sharing one pull secret into one request per TTL.
// Staleness is bounded by the TTL, and Forget drops a pod's secrets after a failed inspection
// so that a retry reads a rotated secret afresh.
type podSecrets struct {
	reader client.Reader
	cache  *expirable.LRU[types.NamespacedName, credentials.Config]
}

func newPodSecrets(reader client.Reader, size int, ttl time.Duration) *podSecrets {
	return &podSecrets{reader: reader, cache: expirable.NewLRU[types.NamespacedName, credentials.Config](size, nil, ttl)}
}

// Configs returns the parsed imagePullSecrets of the pod, in the pod's order. Like the kubelet,
// it skips secrets that do not exist or cannot be parsed (logging which, never their content);
// other errors from the apiserver are returned.
func (p *podSecrets) Configs(ctx context.Context, pod *corev1.Pod, log logr.Logger) ([]credentials.Config, error) {
	var out []credentials.Config
	var errs []error
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}
		if cfg, ok := p.cache.Get(key); ok {
			out = append(out, cfg)
			continue
		}
		secret := &corev1.Secret{}
		if err := p.reader.Get(quietContext(ctx), key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				log.V(1).Info("Image pull secret not found, skipping it", "secret", key.String())
				continue
			}
			errs = append(errs, fmt.Errorf("reading image pull secret %s: %w", key, err))
			continue
		}
		cfg, err := credentials.ParseSecret(secret, false)
		if err != nil {
			log.V(1).Info("Image pull secret unusable, skipping it", "secret", key.String(), "reason", err.Error())
			continue
		}
		p.cache.Add(key, cfg)
		out = append(out, cfg)
	}
	return out, errors.Join(errs...)
}

// Forget drops the pod's imagePullSecrets from the cache.
func (p *podSecrets) Forget(pod *corev1.Pod) {
	for _, ref := range pod.Spec.ImagePullSecrets {
		p.cache.Remove(types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name})
	}
}

// LoadKeyring reads the credentials the controller inspects the pod's images with — its
// imagePullSecrets, then the global pull secret (global nil: none) — straight from reader,
// without the controller's caches but through the same code. `archgate explain` uses it so that
// it inspects with exactly the controller's credentials; log receives what the controller logs
// about secrets it skips.
func LoadKeyring(ctx context.Context, reader client.Reader, pod *corev1.Pod, global *types.NamespacedName, log logr.Logger) (*credentials.Keyring, error) {
	var g *globalPullSecret
	if global != nil {
		g = &globalPullSecret{key: *global, reader: reader, clock: clock.RealClock{}}
	}
	secrets := newPodSecrets(reader, max(len(pod.Spec.ImagePullSecrets), 1), time.Minute)
	return loadKeyring(logf.IntoContext(ctx, log), g, secrets, pod, log)
}

// loadKeyring builds the keyring of the pod: its imagePullSecrets, then the global pull secret
// (global nil: none).
func loadKeyring(ctx context.Context, global *globalPullSecret, secrets *podSecrets, pod *corev1.Pod, log logr.Logger) (*credentials.Keyring, error) {
	var cfg *credentials.Config
	if global != nil {
		var err error
		if cfg, err = global.Config(ctx); err != nil {
			return nil, err
		}
	}
	podCfgs, err := secrets.Configs(ctx, pod, log)
	if err != nil {
		return nil, err
	}
	return credentials.NewKeyring(cfg, podCfgs...), nil
}

// quietContext is ctx without its logger, for reading Secrets: client-go's REST client logs
// response bodies (the secret's data) through the context's logger at V(8), and no log
// verbosity may ever write credentials. The error is returned and logged by the caller.
func quietContext(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}

// NodeCredentials gives the credentials of the kubelet's credential provider plugins for an
// image (credprovider.Provider).
type NodeCredentials interface {
	// Configs returns the plugins' credentials for the image, running them when their cached
	// responses do not cover it; the error names each plugin that failed.
	Configs(ctx context.Context, image string) ([]credentials.Config, error)
	// CachedConfigs returns the live cached responses without running any plugin.
	CachedConfigs() []credentials.Config
}

// GlobalKeyring returns the node-level credentials every pod is served, for deciding which
// cached results a pod without imagePullSecrets may be given at admission (package
// knownimages): the global pull secret's and the credential provider plugins' currently cached
// responses (the kubelet would give any pod the same). Nil when neither is configured. Valid
// after SetupWithManager.
func (r *Reconciler) GlobalKeyring(ctx context.Context) (*credentials.Keyring, error) {
	if r.global == nil && r.opts.NodeCredentials == nil {
		return nil, nil
	}
	var cfg *credentials.Config
	if r.global != nil {
		var err error
		if cfg, err = r.global.Config(ctx); err != nil {
			return nil, err
		}
	}
	keyring := credentials.NewKeyring(cfg)
	if r.opts.NodeCredentials != nil {
		keyring = keyring.WithNode(r.opts.NodeCredentials.CachedConfigs()...)
	}
	return keyring, nil
}
