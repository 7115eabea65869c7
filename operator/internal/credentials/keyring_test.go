package credentials

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cfg builds a parsed pull secret from registry key → username (the password is "pw-"+username).
func cfg(t *testing.T, src Source, entries map[string]string) Config {
	t.Helper()
	auths := map[string]map[string]string{}
	for loc, user := range entries {
		auths[loc] = map[string]string{"username": user, "password": "pw-" + user}
	}
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseDockerConfigJSON(src, data)
	if err != nil {
		t.Fatalf("ParseDockerConfigJSON() error = %v", err)
	}
	return c
}

// users returns the usernames of the candidates, in order.
func users(c Candidates) []string {
	var out []string
	for _, cred := range c {
		out = append(out, cred.Auth.Username)
	}
	return out
}

func TestPatternMatches(t *testing.T) {
	tests := map[string]struct {
		key       string
		image     string
		wantMatch bool
	}{
		"exact host":                       {key: "registry.example", image: "registry.example/app:1", wantMatch: true},
		"scheme tolerated":                 {key: "https://registry.example", image: "registry.example/app", wantMatch: true},
		"http scheme tolerated":            {key: "http://registry.example/", image: "registry.example/app", wantMatch: true},
		"v1 path element dropped":          {key: "https://registry.example/v1/", image: "registry.example/app", wantMatch: true},
		"host case-insensitive":            {key: "Registry.Example", image: "registry.example/app", wantMatch: true},
		"other host":                       {key: "registry.example", image: "other.example/app", wantMatch: false},
		"port must match":                  {key: "registry.example:5000", image: "registry.example:5000/app", wantMatch: true},
		"key without port, image with":     {key: "registry.example", image: "registry.example:5000/app", wantMatch: false},
		"key with port, image without":     {key: "registry.example:5000", image: "registry.example/app", wantMatch: false},
		"different port":                   {key: "registry.example:5000", image: "registry.example:5001/app", wantMatch: false},
		"path prefix":                      {key: "registry.example/team", image: "registry.example/team/app", wantMatch: true},
		"path prefix deep":                 {key: "registry.example/team/sub", image: "registry.example/team/sub/deep/app@sha256:" + sixtyFourHex, wantMatch: true},
		"path prefix other team":           {key: "registry.example/team", image: "registry.example/other/app", wantMatch: false},
		"path prefix is a string prefix":   {key: "registry.example/team", image: "registry.example/teammate/app", wantMatch: true},
		"path prefix with slash":           {key: "registry.example/team/", image: "registry.example/teammate/app", wantMatch: false},
		"wildcard one label":               {key: "*.registry.example", image: "eu.registry.example/app", wantMatch: true},
		"wildcard not two labels":          {key: "*.registry.example", image: "a.eu.registry.example/app", wantMatch: false},
		"wildcard not zero labels":         {key: "*.registry.example", image: "registry.example/app", wantMatch: false},
		"wildcard inside label":            {key: "eu-*.registry.example", image: "eu-west.registry.example/app", wantMatch: true},
		"wildcard with port and path":      {key: "*.registry.example:5000/team", image: "eu.registry.example:5000/team/app", wantMatch: true},
		"wildcard with port, wrong port":   {key: "*.registry.example:5000", image: "eu.registry.example/app", wantMatch: false},
		"two wildcards":                    {key: "*.*.example", image: "a.b.example/app", wantMatch: true},
		"short name is docker hub library": {key: "docker.io", image: "nginx", wantMatch: true},
		"index.docker.io alias":            {key: "index.docker.io", image: "nginx:1.27", wantMatch: true},
		"docker hub v1 url":                {key: "https://index.docker.io/v1/", image: "docker.io/library/nginx", wantMatch: true},
		"docker hub user repo":             {key: "docker.io/someone", image: "someone/app", wantMatch: true},
		"docker hub library path":          {key: "docker.io/library", image: "busybox", wantMatch: true},
		"docker hub key not for quay":      {key: "docker.io", image: "quay.io/app", wantMatch: false},
		"localhost with port":              {key: "localhost:5000", image: "localhost:5000/app", wantMatch: true},
		"ip with port":                     {key: "10.0.0.1:5000", image: "10.0.0.1:5000/app", wantMatch: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := parsePattern(tc.key)
			if err != nil {
				t.Fatalf("parsePattern(%q) error = %v", tc.key, err)
			}
			tg, err := parseTarget(tc.image)
			if err != nil {
				t.Fatalf("parseTarget(%q) error = %v", tc.image, err)
			}
			if got := p.matches(tg); got != tc.wantMatch {
				t.Errorf("pattern %q matches %q = %v, want %v", tc.key, tc.image, got, tc.wantMatch)
			}
		})
	}
}

const sixtyFourHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestKeyringLookup(t *testing.T) {
	podA := Source{Namespace: "ns", Name: "a"}
	podB := Source{Namespace: "ns", Name: "b"}
	global := Source{Namespace: "openshift-config", Name: "pull-secret", Global: true}
	tests := map[string]struct {
		global    map[string]string
		pod       []map[string]string
		node      []map[string]string // credential provider plugins' responses, in order
		image     string
		wantUsers []string
	}{
		"nothing matches is anonymous": {
			global:    map[string]string{"quay.io": "g"},
			image:     "registry.example/app",
			wantUsers: nil,
		},
		"global only": {
			global:    map[string]string{"registry.example": "g"},
			image:     "registry.example/app:1",
			wantUsers: []string{"g"},
		},
		"pod secrets before global": {
			global:    map[string]string{"registry.example": "g"},
			pod:       []map[string]string{{"registry.example": "p"}},
			image:     "registry.example/app",
			wantUsers: []string{"p", "g"},
		},
		"pod secrets before a more specific global entry": {
			global:    map[string]string{"registry.example/team": "g"},
			pod:       []map[string]string{{"registry.example": "p"}},
			image:     "registry.example/team/app",
			wantUsers: []string{"p", "g"},
		},
		"longest path prefix first": {
			pod: []map[string]string{{
				"registry.example":           "host",
				"registry.example/team":      "team",
				"registry.example/team/sub":  "sub",
				"registry.example/otherteam": "other",
			}},
			image:     "registry.example/team/sub/app",
			wantUsers: []string{"sub", "team", "host"},
		},
		"exact host beats wildcard": {
			pod:       []map[string]string{{"*.registry.example": "wild", "eu.registry.example": "exact"}},
			image:     "eu.registry.example/app",
			wantUsers: []string{"exact", "wild"},
		},
		"wildcard with path beats exact host without": {
			pod:       []map[string]string{{"*.registry.example/team": "wildteam", "eu.registry.example": "exact"}},
			image:     "eu.registry.example/team/app",
			wantUsers: []string{"wildteam", "exact"},
		},
		"fewer wildcards first": {
			global:    map[string]string{"*.*.example": "two", "*.registry.example": "one"},
			image:     "eu.registry.example/app",
			wantUsers: []string{"one", "two"},
		},
		"equally specific pod entries keep imagePullSecrets order": {
			pod:       []map[string]string{{"registry.example": "first"}, {"registry.example": "second"}},
			image:     "registry.example/app",
			wantUsers: []string{"first", "second"},
		},
		"more specific entry of a later pod secret first": {
			pod:       []map[string]string{{"registry.example": "first"}, {"registry.example/team": "second"}},
			image:     "registry.example/team/app",
			wantUsers: []string{"second", "first"},
		},
		"identical material listed once": {
			global:    map[string]string{"registry.example": "same"},
			pod:       []map[string]string{{"registry.example": "same"}},
			image:     "registry.example/app",
			wantUsers: []string{"same"},
		},
		"registry port": {
			global:    map[string]string{"registry.example": "noport", "registry.example:5000": "port"},
			image:     "registry.example:5000/team/app:v1@sha256:" + sixtyFourHex,
			wantUsers: []string{"port"},
		},
		"docker hub aliases": {
			global:    map[string]string{"https://index.docker.io/v1/": "hub"},
			pod:       []map[string]string{{"docker.io/library": "library"}},
			image:     "nginx",
			wantUsers: []string{"library", "hub"},
		},
		"plugins after pod secrets and global, even when more specific": {
			global:    map[string]string{"registry.example": "g"},
			pod:       []map[string]string{{"registry.example": "p"}},
			node:      []map[string]string{{"registry.example/team": "plugin"}},
			image:     "registry.example/team/app",
			wantUsers: []string{"p", "g", "plugin"},
		},
		"plugins keep the configuration's order": {
			node:      []map[string]string{{"*.example": "first"}, {"registry.example/team": "second"}},
			image:     "registry.example/team/app",
			wantUsers: []string{"first", "second"},
		},
		"a plugin entry that does not match is not a candidate": {
			node:      []map[string]string{{"other.example": "plugin"}},
			image:     "registry.example/app",
			wantUsers: nil,
		},
		"identical plugin material listed once": {
			global:    map[string]string{"registry.example": "same"},
			node:      []map[string]string{{"registry.example": "same"}},
			image:     "registry.example/app",
			wantUsers: []string{"same"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var g *Config
			if tc.global != nil {
				c := cfg(t, global, tc.global)
				g = &c
			}
			var pods []Config
			for i, p := range tc.pod {
				src := podA
				if i > 0 {
					src = podB
				}
				pods = append(pods, cfg(t, src, p))
			}
			var node []Config
			for i, n := range tc.node {
				node = append(node, cfg(t, Source{Plugin: fmt.Sprintf("plugin-%d", i)}, n))
			}
			got, err := NewKeyring(g, pods...).WithNode(node...).Lookup(tc.image)
			if err != nil {
				t.Fatalf("Lookup(%q) error = %v", tc.image, err)
			}
			if diff := cmp.Diff(tc.wantUsers, users(got)); diff != "" {
				t.Errorf("Lookup(%q) users mismatch (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

func TestKeyringLookupSourcesAndPatterns(t *testing.T) {
	global := cfg(t, Source{Namespace: "cfg", Name: "global", Global: true}, map[string]string{"*.registry.example": "g"})
	pod := cfg(t, Source{Namespace: "ns", Name: "pod"}, map[string]string{"https://EU.registry.example/v2/team": "p"})
	got, err := NewKeyring(&global, pod).Lookup("eu.registry.example/team/app")
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Source  string
		Pattern string
	}
	var gotSummary []summary
	for _, c := range got {
		gotSummary = append(gotSummary, summary{Source: c.Source.String(), Pattern: c.Pattern})
	}
	want := []summary{
		{Source: "ns/pod", Pattern: "eu.registry.example/team"},
		{Source: "global cfg/global", Pattern: "*.registry.example"},
	}
	if diff := cmp.Diff(want, gotSummary); diff != "" {
		t.Errorf("Lookup() sources mismatch (-want +got):\n%s", diff)
	}
}

func TestKeyringLookupBadReference(t *testing.T) {
	if _, err := NewKeyring(nil).Lookup("Registry.Example/UPPER"); err == nil {
		t.Error("Lookup() of an invalid reference: error = nil, want an error")
	}
}

func TestIdentity(t *testing.T) {
	base := AuthConfig{Username: "u", Password: "p"}
	tests := map[string]struct {
		a, b      AuthConfig
		wantEqual bool
	}{
		"same material":                     {a: base, b: AuthConfig{Username: "u", Password: "p"}, wantEqual: true},
		"password changed":                  {a: base, b: AuthConfig{Username: "u", Password: "q"}},
		"username changed":                  {a: base, b: AuthConfig{Username: "v", Password: "p"}},
		"identity token added":              {a: base, b: AuthConfig{Username: "u", Password: "p", IdentityToken: "t"}},
		"fields do not run into each other": {a: AuthConfig{Username: "ab", Password: "c"}, b: AuthConfig{Username: "a", Password: "bc"}},
		"token fields are distinct":         {a: AuthConfig{IdentityToken: "t"}, b: AuthConfig{RegistryToken: "t"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ida, idb := tc.a.Identity(), tc.b.Identity()
			if gotEqual := ida == idb; gotEqual != tc.wantEqual {
				t.Errorf("identities %q and %q: equal = %v, want %v", ida, idb, gotEqual, tc.wantEqual)
			}
			for _, id := range []Identity{ida, idb} {
				if len(id) != identityLen || id == Anonymous {
					t.Errorf("identity %q: want %d hex characters", id, identityLen)
				}
			}
		})
	}
}

func TestIdentityIsStable(t *testing.T) {
	// A fixed value guards against accidental changes of the hashing, which would silently
	// orphan every cache entry and Invalidate call keyed by identities computed elsewhere.
	got := AuthConfig{Username: "alice", Password: "secret"}.Identity()
	const want Identity = "69f6ae698f086de43d2c92051f9bd161"
	if got != want {
		t.Errorf("Identity() = %q, want %q", got, want)
	}
}

func TestGlobalSecretChangeChangesIdentities(t *testing.T) {
	src := Source{Namespace: "cfg", Name: "global", Global: true}
	before := cfg(t, src, map[string]string{"registry.example": "old"})
	after := cfg(t, src, map[string]string{"registry.example": "new"})
	idsBefore := mustLookup(t, NewKeyring(&before), "registry.example/app").Identities()
	idsAfter := mustLookup(t, NewKeyring(&after), "registry.example/app").Identities()
	if cmp.Equal(idsBefore, idsAfter) {
		t.Errorf("identities before and after the change are both %v, want them to differ", idsBefore)
	}
	if diff := cmp.Diff(before.Identities(), idsBefore); diff != "" {
		t.Errorf("Config.Identities() does not list the looked-up identity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Identity{Anonymous}, Candidates(nil).Identities()); diff != "" {
		t.Errorf("Candidates(nil).Identities() mismatch (-want +got):\n%s", diff)
	}
}

func mustLookup(t *testing.T, k *Keyring, image string) Candidates {
	t.Helper()
	c, err := k.Lookup(image)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestStaleIdentities(t *testing.T) {
	src := Source{Namespace: "cfg", Name: "global", Global: true}
	old := AuthConfig{Username: "old", Password: "pw-old"}.Identity()
	kept := AuthConfig{Username: "kept", Password: "pw-kept"}.Identity()
	tests := map[string]struct {
		before, after map[string]string
		want          []Identity
	}{
		"password rotated": {
			before: map[string]string{"r.example": "old", "q.example": "kept"},
			after:  map[string]string{"r.example": "new", "q.example": "kept"},
			want:   []Identity{old},
		},
		"registry added": {
			before: map[string]string{"q.example": "kept"},
			after:  map[string]string{"q.example": "kept", "r.example": "new"},
			want:   nil,
		},
		"secret emptied": {
			before: map[string]string{"q.example": "kept", "r.example": "old"},
			after:  map[string]string{},
			want:   []Identity{kept, old},
		},
		"same material moved to another registry key": {
			before: map[string]string{"r.example": "kept"},
			after:  map[string]string{"s.example": "kept"},
			want:   nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := StaleIdentities(cfg(t, src, tc.before), cfg(t, src, tc.after))
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b Identity) bool { return a < b })); diff != "" {
				t.Errorf("StaleIdentities() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
