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
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archgate/archgate/operator/internal/credentials"
)

func TestRegistryKey(t *testing.T) {
	tests := map[string]string{
		"docker.io":                      "docker.io",
		"registry-1.docker.io":           "docker.io",
		"a.evil.example.com":             "example.com",
		"b.evil.example.com:5000":        "example.com",
		"quay.io:443":                    "quay.io",
		"eu.gcr.io":                      "gcr.io",
		"10.0.0.7:5000":                  "10.0.0.7:5000",
		"10.0.0.7:5001":                  "10.0.0.7:5001",
		"[fd00::1]:5000":                 "[fd00::1]:5000",
		"localhost:5000":                 "localhost",
		"registry.ns.svc.cluster.local":  "registry.ns.svc.cluster.local",
		"evil.tenant.svc.cluster.local":  "evil.tenant.svc.cluster.local",
		"image-registry.openshift-image": "image-registry.openshift-image",
		"app.example.co.uk":              "example.co.uk",
	}
	for domain, want := range tests {
		if got := registryKey(domain); got != want {
			t.Errorf("registryKey(%q) = %q, want %q", domain, got, want)
		}
	}
}

// A registry with its limit of inspections in flight refuses the next one at once with
// ReasonRegistryBusy, without a request; another registry is not affected; the slots come back
// when the inspections end.
func TestRegistryInspectorLimitsInspectionsPerRegistry(t *testing.T) {
	host, accepted := hangingHost(t)
	other, _ := hangingHost(t) // another port: another server
	ri, err := NewRegistryInspector(Options{Timeout: time.Minute, MaxInspectionsPerRegistry: 2, BreakerFailures: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, img := range []string{host + "/a:1", host + "/b:1"} {
		wg.Go(func() { _, _ = ri.Architectures(ctx, img, credentials.Candidates{}) })
	}
	// Both hold their slots while the first pings the registry for both (one /v2/ per host).
	waitFor(t, "both inspections in flight at the registry", func() bool {
		return accepted() >= 1 && ri.slots.byRegistry.InUse(registryKey(host)) == 2
	})

	before := accepted()
	_, err = ri.Architectures(t.Context(), host+"/c:1", credentials.Candidates{})
	if r := ReasonOf(err); r != ReasonRegistryBusy {
		t.Fatalf("a third inspection of the busy registry: %v (reason %q), want %q", err, r, ReasonRegistryBusy)
	}
	if accepted() != before {
		t.Errorf("the refused inspection connected to the registry")
	}
	short, stop := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer stop()
	if _, err := ri.Architectures(short, other+"/a:1", credentials.Candidates{}); ReasonOf(err) == ReasonRegistryBusy {
		t.Errorf("another registry was refused as busy: %v", err)
	}
	cancel()
	wg.Wait()
	short, stop = context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer stop()
	if _, err := ri.Architectures(short, host+"/c:1", credentials.Candidates{}); ReasonOf(err) == ReasonRegistryBusy {
		t.Errorf("the registry still busy after its inspections ended: %v", err)
	}
}

// A busy registry's refusal is not remembered by the failure cache: the next pod asks again.
func TestCachingInspectorForgetsBusyRegistries(t *testing.T) {
	var asked atomic.Int32
	next := InspectorFunc(func(_ context.Context, image string, _ credentials.Candidates) (Result, error) {
		if asked.Add(1) == 1 {
			return Result{}, &Error{Image: image, Reason: ReasonRegistryBusy, Err: errors.New("busy")}
		}
		return Result{Architectures: []string{"arm64"}}, nil
	})
	c := NewCachingInspector(next, CacheOptions{FailureTTL: time.Hour})
	if _, err := c.Architectures(t.Context(), "r.example/app:1", nil); ReasonOf(err) != ReasonRegistryBusy {
		t.Fatalf("first inspection: %v, want busy", err)
	}
	if res, err := c.Architectures(t.Context(), "r.example/app:1", nil); err != nil || !res.Supports("arm64") {
		t.Errorf("second inspection: %+v, %v; want the registry asked again", res, err)
	}
}

// One tenant alone takes a registry's slots up to half of them; once the registry is half full a
// tenant holds at most a quarter, so the others, and inspections for no tenant, take the rest up
// to the registry's limit; released slots come back.
func TestRegistrySlotsTenantShare(t *testing.T) {
	s := newRegistrySlots(8) // half full at 4, a share of 2 once crowded
	var releases []func()
	take := func(domain, tenant string) error {
		release, err := s.acquire(domain, tenant, domain+"/app:1")
		if err == nil {
			releases = append(releases, release)
		}
		return err
	}
	steps := []struct {
		domain, tenant string
		wantBusy       bool
	}{
		{"reg.example", "attacker", false},
		{"reg.example", "attacker", false},
		{"reg.example", "attacker", false}, // beyond its share: nobody else is waiting
		{"reg.example", "attacker", false}, // half the registry
		{"reg.example", "attacker", true},  // crowded now: beyond its share
		{"other.example", "attacker", false},
		{"reg.example", "team-a", false},
		{"reg.example", "team-a", false},
		{"reg.example", "team-a", true}, // its share of a crowded registry
		{"reg.example", "", false},
		{"reg.example", "team-b", false}, // the registry's 8th
		{"reg.example", "team-c", true},  // its limit
	}
	for i, st := range steps {
		err := take(st.domain, st.tenant)
		if busy := ReasonOf(err) == ReasonRegistryBusy; busy != st.wantBusy {
			t.Fatalf("step %d (%s for %q): %v, want busy %v", i, st.domain, st.tenant, err, st.wantBusy)
		}
	}
	for _, release := range releases {
		release()
	}
	if n, m := s.byRegistry.Held(), s.byTenant.Held(); n != 0 || m != 0 {
		t.Errorf("slots left after every release: %d registries, %d tenants", n, m)
	}
}
