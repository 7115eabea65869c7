package credprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"k8s.io/utils/clock"

	"github.com/archgate/archgate/operator/internal/credentials"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one plugin execution (the kubelet allows a minute; a plugin answers
	// in well under a second unless its cloud API is down).
	DefaultTimeout = 30 * time.Second
	// DefaultCacheSize bounds the cached responses (a few per registry and image).
	DefaultCacheSize = 1024
)

// Options configure a Provider.
type Options struct {
	// Config is the validated CredentialProviderConfig (ParseConfig, LoadConfig). Required.
	Config *kubeletconfigv1.CredentialProviderConfig
	// BinDir holds the plugin executables, one per provider name (the kubelet's
	// --image-credential-provider-bin-dir). Required.
	BinDir string
	// Timeout bounds one execution; DefaultTimeout when zero.
	Timeout time.Duration
	// ErrorTTL is how long a failed execution is remembered per provider and repository and
	// answered to every caller, so that a broken plugin is not run again for every pod and
	// retry; zero remembers none. The controller passes spec.imageInspection.failureCacheTTL.
	ErrorTTL time.Duration
	// CacheSize bounds the cached responses; DefaultCacheSize when zero.
	CacheSize int
	// Clock drives expiry; the real clock when nil.
	Clock clock.PassiveClock
}

// cacheKey is where a response is cached: the provider, the response's cacheKeyType and the
// key of that type (repository, registry host[:port], or "" for Global).
type cacheKey struct {
	provider string
	keyType  credentialproviderv1.PluginCacheKeyType
	key      string
}

type cachedResponse struct {
	config  credentials.Config
	expires time.Time
}

// Provider asks the configured plugins for the credentials of an image and caches their
// responses as the kubelet does. Safe for concurrent use.
type Provider struct {
	plugins  []plugin
	timeout  time.Duration
	clock    clock.PassiveClock
	cache    *lru.Cache[cacheKey, cachedResponse]
	failures *expirable.LRU[cacheKey, error] // nil when ErrorTTL is zero
	group    singleflight.Group
}

// New returns a Provider over the configuration's plugins.
func New(opts Options) (*Provider, error) {
	if opts.Config == nil || opts.BinDir == "" {
		return nil, errors.New("credprovider: Options.Config and Options.BinDir are required")
	}
	size := cmp.Or(max(opts.CacheSize, 0), DefaultCacheSize)
	cache, err := lru.New[cacheKey, cachedResponse](size)
	if err != nil {
		return nil, err
	}
	p := &Provider{timeout: cmp.Or(max(opts.Timeout, 0), DefaultTimeout), clock: opts.Clock, cache: cache}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if opts.ErrorTTL > 0 {
		p.failures = expirable.NewLRU[cacheKey, error](size, nil, opts.ErrorTTL)
	}
	for _, cp := range opts.Config.Providers {
		p.plugins = append(p.plugins, newPlugin(cp, opts.BinDir))
	}
	return p, nil
}

// Executables returns the path of every plugin's executable, for a start-up check.
func (p *Provider) Executables() []string {
	out := make([]string, len(p.plugins))
	for i, pl := range p.plugins {
		out[i] = pl.path
	}
	return out
}

// Configs returns the credentials every plugin whose matchImages apply returned for the image,
// in the configuration's order. A plugin that fails is left out, as the kubelet does (the image
// may still be readable with other credentials or anonymously); the error names each failing
// provider and the image, for the caller to report if the inspection then fails.
func (p *Provider) Configs(ctx context.Context, image string) ([]credentials.Config, error) {
	var matching []plugin
	for _, pl := range p.plugins {
		if pl.matches(image) {
			matching = append(matching, pl)
		}
	}
	if len(matching) == 0 {
		return nil, nil
	}
	keys, err := imageKeys(image)
	if err != nil {
		return nil, err
	}
	var out []credentials.Config
	var errs []error
	for _, pl := range matching {
		cfg, err := p.config(ctx, pl, keys)
		if err != nil {
			errs = append(errs, fmt.Errorf("credential provider %s for image %s: %w", pl.provider.Name, image, err))
			continue
		}
		out = append(out, cfg)
	}
	return out, errors.Join(errs...)
}

// imageKeys are the cache keys of an image by cacheKeyType.
func imageKeys(image string) (map[credentialproviderv1.PluginCacheKeyType]string, error) {
	repo, err := credentials.Repository(image)
	if err != nil {
		return nil, err
	}
	registry, err := credentials.Registry(image)
	if err != nil {
		return nil, err
	}
	return map[credentialproviderv1.PluginCacheKeyType]string{
		credentialproviderv1.ImagePluginCacheKeyType:    repo,
		credentialproviderv1.RegistryPluginCacheKeyType: registry,
		credentialproviderv1.GlobalPluginCacheKeyType:   "",
	}, nil
}

// config returns the plugin's cached response for the image, or runs it: concurrent callers for
// one provider and repository share one execution, which is detached from any one caller's
// cancellation and bounded by the timeout.
func (p *Provider) config(ctx context.Context, pl plugin, keys map[credentialproviderv1.PluginCacheKeyType]string) (credentials.Config, error) {
	if cfg, ok := p.cached(pl.provider.Name, keys); ok {
		return cfg, nil
	}
	repo := keys[credentialproviderv1.ImagePluginCacheKeyType]
	failureKey := cacheKey{provider: pl.provider.Name, keyType: credentialproviderv1.ImagePluginCacheKeyType, key: repo}
	if p.failures != nil {
		if err, ok := p.failures.Get(failureKey); ok {
			return credentials.Config{}, err
		}
	}
	ch := p.group.DoChan(pl.provider.Name+"\x00"+repo, func() (any, error) {
		if cfg, ok := p.cached(pl.provider.Name, keys); ok {
			return cfg, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
		defer cancel()
		resp, err := pl.run(rctx, repo)
		if err != nil {
			if p.failures != nil {
				p.failures.Add(failureKey, err)
			}
			return nil, err
		}
		if resp.duration > 0 {
			k := cacheKey{provider: pl.provider.Name, keyType: resp.keyType, key: keys[resp.keyType]}
			p.cache.Add(k, cachedResponse{config: resp.config, expires: p.clock.Now().Add(resp.duration)})
		}
		return resp.config, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return credentials.Config{}, r.Err
		}
		return r.Val.(credentials.Config), nil
	case <-ctx.Done():
		return credentials.Config{}, ctx.Err()
	}
}

// cached returns a live cached response of the provider for the image, looking the image's
// repository, then its registry, then the provider's global key up, as the kubelet does.
func (p *Provider) cached(provider string, keys map[credentialproviderv1.PluginCacheKeyType]string) (credentials.Config, bool) {
	now := p.clock.Now()
	for _, t := range []credentialproviderv1.PluginCacheKeyType{
		credentialproviderv1.ImagePluginCacheKeyType, credentialproviderv1.RegistryPluginCacheKeyType, credentialproviderv1.GlobalPluginCacheKeyType,
	} {
		k := cacheKey{provider: provider, keyType: t, key: keys[t]}
		c, ok := p.cache.Get(k)
		if !ok {
			continue
		}
		if !now.Before(c.expires) {
			p.cache.Remove(k)
			continue
		}
		return c.config, true
	}
	return credentials.Config{}, false
}

// CachedConfigs returns every live cached response, without running any plugin: the node
// credentials a pod without imagePullSecrets is currently served, for deciding which cached
// inspection results such a pod may be given (package knownimages).
func (p *Provider) CachedConfigs() []credentials.Config {
	now := p.clock.Now()
	var out []credentials.Config
	for _, k := range p.cache.Keys() {
		if c, ok := p.cache.Peek(k); ok && now.Before(c.expires) {
			out = append(out, c.config)
		}
	}
	return out
}
