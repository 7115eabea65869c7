package inspect

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
)

// minCacheTTL is the shortest TTL accepted.
const minCacheTTL = 10 * time.Millisecond

// CacheOptions configure a CachingInspector.
type CacheOptions struct {
	// Size bounds the entries for references by tag; the API's default
	// (v1beta1.DefaultImageCacheSize, an entry is a few hundred bytes) when zero.
	Size int
	// TTL is how long a tag's result is served (a tag can be pushed again, with other
	// architectures, at any time); v1beta1.DefaultImageCacheTTL when zero.
	TTL time.Duration
	// DigestSize bounds the entries for references pinned by digest; v1beta1.DefaultImageCacheSize
	// when zero.
	DigestSize int
	// DigestTTL is how long a digest's result is served. Zero means until evicted: the content
	// behind a digest cannot change.
	DigestTTL time.Duration
	// FailureTTL is how long a failed inspection is remembered, per reference and set of
	// credentials, and answered to every caller with those (a pod's retries included); zero
	// remembers none. Failures live in a third LRU of Size entries.
	FailureTTL time.Duration
	// Metrics receives the cache metrics; unregistered metrics when nil.
	Metrics *Metrics
}

// cacheKey is a canonical reference and the identity of the credential that read it.
type cacheKey struct {
	ref string
	id  credentials.Identity
}

// cacheEntry is a cached result. Entries are pointers so that Invalidate can mark one before
// removing it, which tells the eviction callback why it goes.
type cacheEntry struct {
	result      Result
	expires     time.Time // zero when the entry does not expire
	invalidated atomic.Bool
}

// CachingInspector serves inspection results from memory and asks the next Inspector on a
// miss. It is safe for concurrent use.
//
// An entry is keyed by the canonical reference and the identity of the credential that the
// registry accepted. A lookup checks the keys of the caller's own candidates (or anonymous
// when it has none) and nothing else, so a result is only served to a pod that holds a
// credential which has been able to read the image — never to a pod without credentials,
// or with other ones.
//
// References by tag live in an LRU with a TTL. References pinned by digest are immutable and
// live in a second LRU, without expiry by default; a tag's result is also stored under its
// digest. Concurrent misses for the same reference and candidates share one inspection
// (singleflight); a waiter whose context ends stops waiting, the inspection goes on for the
// others, detached from any one caller's cancellation — so next must bound its own time, as
// RegistryInspector does with Options.Timeout. Errors are never cached.
type CachingInspector struct {
	next    Inspector
	tags    *expirable.LRU[cacheKey, *cacheEntry]
	digests *expirable.LRU[cacheKey, *cacheEntry]
	ttl     time.Duration
	dttl    time.Duration
	group   singleflight.Group
	metrics *Metrics
	// failures holds recent errors by flight key (reference and identities); nil when
	// CacheOptions.FailureTTL is zero.
	failures *expirable.LRU[string, error]

	// generation counts invalidations; an inspection started before one does not store its
	// result, which may have been read with the configuration that was just invalidated.
	generation atomic.Uint64
	// changes counts every store, eviction and invalidation, so that readers of KnownImages
	// can tell that nothing changed without copying the cache.
	changes atomic.Uint64
	// waiting counts callers blocked on an in-flight inspection (observability for tests).
	waiting atomic.Int64
}

// NewCachingInspector wraps next with a cache.
func NewCachingInspector(next Inspector, opts CacheOptions) *CachingInspector {
	if opts.Size <= 0 {
		opts.Size = v1beta1.DefaultImageCacheSize
	}
	if opts.DigestSize <= 0 {
		opts.DigestSize = v1beta1.DefaultImageCacheSize
	}
	if opts.TTL <= 0 {
		opts.TTL = v1beta1.DefaultImageCacheTTL
	}
	if opts.DigestTTL < 0 {
		opts.DigestTTL = 0
	}
	// expirable's cleanup goroutine ticks every TTL/100 and never stops: a TTL under
	// minCacheTTL would make it spin (and one under 100 ns would panic).
	opts.TTL = max(opts.TTL, minCacheTTL)
	if opts.DigestTTL > 0 {
		opts.DigestTTL = max(opts.DigestTTL, minCacheTTL)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	c := &CachingInspector{next: next, ttl: opts.TTL, dttl: opts.DigestTTL, metrics: opts.Metrics}
	// The eviction callbacks run under the LRU's lock: they must not call back into it.
	c.tags = expirable.NewLRU(opts.Size, c.onEvict(cacheTag), opts.TTL)
	c.digests = expirable.NewLRU(opts.DigestSize, c.onEvict(cacheDigest), opts.DigestTTL)
	if opts.FailureTTL > 0 {
		c.failures = expirable.NewLRU[string, error](opts.Size, nil, max(opts.FailureTTL, minCacheTTL))
	}
	c.metrics.entries.attach(func() map[string]int {
		return map[string]int{cacheTag: c.tags.Len(), cacheDigest: c.digests.Len()}
	})
	return c
}

func (c *CachingInspector) onEvict(cache string) expirable.EvictCallback[cacheKey, *cacheEntry] {
	return func(_ cacheKey, e *cacheEntry) {
		c.changes.Add(1)
		reason := evictCapacity
		switch {
		case e.invalidated.Load():
			reason = evictInvalidated
		case !e.expires.IsZero() && !time.Now().Before(e.expires):
			reason = evictExpired
		}
		c.metrics.evictions.WithLabelValues(cache, reason).Inc()
	}
}

// Architectures returns the cached result for imageRef if one of creds (or anonymous access,
// when creds is empty) has read it, and otherwise inspects it with next.
func (c *CachingInspector) Architectures(ctx context.Context, imageRef string, creds credentials.Candidates) (Result, error) {
	ref, pinned, err := CanonicalReference(imageRef)
	if err != nil {
		c.metrics.errors.WithLabelValues(string(ReasonInvalidReference)).Inc()
		return Result{}, &Error{Image: imageRef, Reason: ReasonInvalidReference, Err: err}
	}
	cache, lru := cacheTag, c.tags
	if pinned {
		cache, lru = cacheDigest, c.digests
	}
	ids := creds.Identities()
	if res, ok := c.lookup(lru, ref, ids); ok {
		c.metrics.hits.WithLabelValues(cache).Inc()
		return res, nil
	}
	flight := ref + "\x00" + joinIdentities(ids)
	if err, ok := c.recentFailure(flight); ok {
		c.metrics.failHits.Inc()
		return Result{}, err
	}
	c.metrics.misses.WithLabelValues(cache).Inc()

	executed := false
	c.waiting.Add(1)
	ch := c.group.DoChan(flight, func() (any, error) {
		executed = true
		// A caller that missed just before another flight stored its result lands here.
		if res, ok := c.lookup(lru, ref, ids); ok {
			return res, nil
		}
		gen := c.generation.Load()
		// The inspection serves every waiter: one caller's cancellation must not fail the
		// others. The next inspector applies its own per-image deadline.
		res, err := c.next.Architectures(context.WithoutCancel(ctx), imageRef, creds)
		if err != nil {
			// A busy registry's refusal is about the moment, not the image: never remembered.
			if c.failures != nil && c.generation.Load() == gen && ReasonOf(err) != ReasonRegistryBusy {
				c.failures.Add(flight, err)
			}
			return nil, err
		}
		if c.generation.Load() == gen {
			c.store(ref, pinned, ids, res)
		}
		return res.clone(), nil
	})
	select {
	case r := <-ch:
		c.waiting.Add(-1)
		if !executed {
			c.metrics.shared.Inc()
		}
		if r.Err != nil {
			return Result{}, r.Err
		}
		return r.Val.(Result).clone(), nil
	case <-ctx.Done():
		c.waiting.Add(-1)
		return Result{}, &Error{Image: imageRef, Reason: classify(ctx.Err()), Err: ctx.Err()}
	}
}

// recentFailure returns the remembered failure of the flight, if any.
func (c *CachingInspector) recentFailure(flight string) (error, bool) {
	if c.failures == nil {
		return nil, false
	}
	return c.failures.Get(flight)
}

// lookup returns the first live entry under ref and one of ids.
func (c *CachingInspector) lookup(lru *expirable.LRU[cacheKey, *cacheEntry], ref string, ids []credentials.Identity) (Result, bool) {
	for _, id := range ids {
		if e, ok := lru.Get(cacheKey{ref: ref, id: id}); ok {
			return e.result.clone(), true
		}
	}
	return Result{}, false
}

// store caches res under the identity that read it. A result that does not say which of
// the candidates was accepted is not cached: filing it under the wrong one would serve it
// to pods that hold only that one.
func (c *CachingInspector) store(ref string, pinned bool, ids []credentials.Identity, res Result) {
	c.changes.Add(1)
	if !slices.Contains(ids, res.Identity) {
		return
	}
	now := time.Now()
	entry := func(ttl time.Duration) *cacheEntry {
		e := &cacheEntry{result: res.clone()}
		if ttl > 0 {
			e.expires = now.Add(ttl)
		}
		return e
	}
	if pinned {
		c.digests.Add(cacheKey{ref: ref, id: res.Identity}, entry(c.dttl))
		return
	}
	c.tags.Add(cacheKey{ref: ref, id: res.Identity}, entry(c.ttl))
	if res.Digest != "" {
		if byDigest, _, err := CanonicalReference(repository(ref) + "@" + res.Digest); err == nil {
			c.digests.Add(cacheKey{ref: byDigest, id: res.Identity}, entry(c.dttl))
		}
	}
}

// Invalidate drops every entry read with one of ids, for example the identities of a global
// pull secret that was changed or deleted (credentials.Config.Identities), and keeps
// inspections already in flight from storing their results. It returns the number of
// entries removed.
func (c *CachingInspector) Invalidate(ids ...credentials.Identity) int {
	c.changes.Add(1)
	c.generation.Add(1)
	return c.remove(func(k cacheKey) bool { return slices.Contains(ids, k.id) })
}

// Purge drops every entry, for example after the registries configuration changed, and
// keeps inspections already in flight from storing their results.
func (c *CachingInspector) Purge() int {
	c.changes.Add(1)
	c.generation.Add(1)
	return c.remove(func(cacheKey) bool { return true })
}

func (c *CachingInspector) remove(match func(cacheKey) bool) int {
	n := 0
	// Failures are few and short-lived: any invalidation forgets them all, so that new
	// credentials or a new configuration are tried at once.
	if c.failures != nil {
		c.failures.Purge()
	}
	for _, lru := range []*expirable.LRU[cacheKey, *cacheEntry]{c.tags, c.digests} {
		for _, k := range lru.Keys() {
			if !match(k) {
				continue
			}
			if e, ok := lru.Peek(k); ok {
				e.invalidated.Store(true)
			}
			if lru.Remove(k) {
				n++
			}
		}
	}
	return n
}

// Changes returns a counter that moves whenever an entry is stored, evicted or invalidated:
// equal values mean KnownImages would return the same entries (but for expiry).
func (c *CachingInspector) Changes() uint64 { return c.changes.Load() }

// Len returns the number of entries in the tag and digest caches.
func (c *CachingInspector) Len() (tags, digests int) { return c.tags.Len(), c.digests.Len() }

// repository strips the tag or digest from a canonical reference.
func repository(ref string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

func joinIdentities(ids []credentials.Identity) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(id))
	}
	return b.String()
}

// KnownImage is a cached result as the pod placement controller publishes it for the webhook
// (package knownimages).
type KnownImage struct {
	// Ref is the canonical reference (CanonicalReference).
	Ref string `json:"ref"`
	// Architectures and AnyArchitecture are those of Result.
	Architectures   []string `json:"architectures,omitempty"`
	AnyArchitecture bool     `json:"anyArchitecture,omitempty"`
	// Expires is when the entry stops being served; nil for a digest kept until evicted.
	Expires *time.Time `json:"expires,omitempty"`
}

// KnownImages returns the live entries that a lookup with identities(ref) would be served —
// for the webhook, the identities a pod without imagePullSecrets has (the global pull secret's,
// or anonymous) — least recently used first, one per reference, without changing their recency.
// Entries read with any other credential never leave the cache: they must not reach a pod that
// does not hold it.
func (c *CachingInspector) KnownImages(identities func(ref string) []credentials.Identity) []KnownImage {
	now := time.Now()
	var out []KnownImage
	seen := map[string]bool{}
	for _, lru := range []*expirable.LRU[cacheKey, *cacheEntry]{c.digests, c.tags} {
		for _, k := range lru.Keys() {
			if seen[k.ref] || !slices.Contains(identities(k.ref), k.id) {
				continue
			}
			e, ok := lru.Peek(k)
			if !ok || (!e.expires.IsZero() && !now.Before(e.expires)) {
				continue
			}
			seen[k.ref] = true
			p := KnownImage{Ref: k.ref, Architectures: slices.Clone(e.result.Architectures), AnyArchitecture: e.result.AnyArchitecture}
			if !e.expires.IsZero() {
				p.Expires = ptr.To(e.expires.UTC().Truncate(time.Second))
			}
			out = append(out, p)
		}
	}
	return out
}

// Result returns the result the entry stands for.
func (p KnownImage) Result() Result {
	return Result{Architectures: slices.Clone(p.Architectures), AnyArchitecture: p.AnyArchitecture}
}
