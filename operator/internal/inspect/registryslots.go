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

package inspect

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/archgate/archgate/operator/internal/limits"
)

// DefaultMaxInspectionsPerRegistry bounds the inspections in flight against one registry (see
// registryKey): half of the controller's default 32 pod workers, so that registries that
// never answer, named from any number of namespaces, hold at most half of the workers for the
// inspection timeout before their circuit opens. Once a registry is half full, one namespace
// (see WithTenant) may hold no more than a quarter of its inspections, so that a tenant's slow
// repository on a registry the others use too (a public one) leaves them at least half.
const DefaultMaxInspectionsPerRegistry = 16

// tenantKey is the context key of the tenant an inspection is made for.
type tenantKey struct{}

// WithTenant returns ctx carrying the tenant (the pod's namespace) an inspection is made for:
// its share of a registry's inspections is bounded.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// registrySlots counts the inspections in flight per registry, and per registry and tenant. An
// inspection over its registry's limit, or over its tenant's share while the registry is
// crowded, fails at once with ReasonRegistryBusy rather than waiting: a waiting inspection would
// hold its pod's worker just as a hanging one does. The caller retries it shortly, without
// counting it as a failure. Safe for concurrent use.
//
// The share is enforced only once the registry is half full, so that one namespace alone (a
// Deployment scaled up, a burst of new images) takes twice its share of a registry nobody else
// needs at the moment; a tenant that took more than its share then keeps what it holds, so a
// tenant holds at most half of a registry's slots, and others always have the other half.
type registrySlots struct {
	byRegistry *limits.Keyed[string]
	byTenant   *limits.Keyed[[2]string] // registry, tenant
	share      int                      // a tenant's slots of a crowded registry
}

// newRegistrySlots returns the slots, a quarter of them a tenant's share of a crowded registry;
// limit <= 0 means no limit (nil).
func newRegistrySlots(limit int) *registrySlots {
	if limit <= 0 {
		return nil
	}
	return &registrySlots{byRegistry: limits.NewKeyed[string](limit), byTenant: limits.NewKeyed[[2]string](limit),
		share: max(limit/4, 1)}
}

// acquire takes a slot of the registry that serves domain (a reference's host[:port]) for
// tenant ("" for none: only the registry's limit applies), for image; the error names the
// registry when it has none left. release must be called after a nil error.
func (s *registrySlots) acquire(domain, tenant, image string) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	key := registryKey(domain)
	tk := [2]string{key, tenant}
	if !s.byRegistry.TryAcquire(key) {
		return nil, &Error{Image: image, Reason: ReasonRegistryBusy, Err: fmt.Errorf(
			"%d inspections of registry %s are in flight, its limit: retried shortly", s.byRegistry.Limit(), key)}
	}
	if tenant == "" {
		return func() { s.byRegistry.Release(key) }, nil
	}
	tenantLimit := s.byRegistry.Limit()
	if s.byRegistry.InUse(key) > s.byRegistry.Limit()/2 { // crowded, this inspection included
		tenantLimit = s.share
	}
	if !s.byTenant.TryAcquireUpTo(tk, tenantLimit) {
		s.byRegistry.Release(key)
		return nil, &Error{Image: image, Reason: ReasonRegistryBusy, Err: fmt.Errorf(
			"%d inspections of registry %s are in flight for namespace %s, its share of a crowded registry: retried shortly", s.share, key, tenant)}
	}
	return func() {
		s.byTenant.Release(tk)
		s.byRegistry.Release(key)
	}, nil
}

// registryKey names the registry whose limit a reference's domain counts against: its
// registrable domain (eTLD+1) for a host name, so that the many names a wildcard DNS entry
// gives one party (a.evil.example, b.evil.example, …) share one limit; the address and port
// for an IP literal, each a server of its own; the host itself when it has no registrable
// domain (localhost, a cluster-local service name, whose suffix is not a public one).
func registryKey(domain string) string {
	host := hostOf(domain)
	if _, err := netip.ParseAddr(host); err == nil {
		return domain
	}
	suffix, icann := publicsuffix.PublicSuffix(host)
	if !icann && !strings.Contains(suffix, ".") {
		return host // no listed suffix: a cluster-local name, each its own server
	}
	if etld1, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return etld1
	}
	return host
}
