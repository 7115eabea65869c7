package credentials

import (
	"slices"
)

// Credential is one candidate credential for an image.
type Credential struct {
	// Auth is the credential material to send.
	Auth AuthConfig
	// Source is the secret it came from and Pattern the entry that matched, for diagnostics.
	Source  Source
	Pattern string
}

// Identity returns the identity of the credential material.
func (c Credential) Identity() Identity { return c.Auth.Identity() }

// Candidates are the credentials to try for one image, in order. Empty means anonymous.
type Candidates []Credential

// Identities returns the identities of the candidates in order, or just Anonymous when
// there are none.
func (c Candidates) Identities() []Identity {
	if len(c) == 0 {
		return []Identity{Anonymous}
	}
	ids := make([]Identity, len(c))
	for i, cred := range c {
		ids[i] = cred.Identity()
	}
	return ids
}

// Keyring holds the pull secrets that apply to one pod: its imagePullSecrets, the global pull
// secret and the credentials of the kubelet credential provider plugins (WithNode). It is
// immutable and safe for concurrent use.
//
// Precedence follows the kubelet, which tries the pod's imagePullSecrets before the node's
// own credentials (the global pull secret plays the node's part):
//
//  1. every matching entry of the pod's imagePullSecrets, most specific first
//     (longest path prefix, then exact host before wildcard host, then reverse lexical
//     order of the key); entries equally specific keep the imagePullSecrets order;
//  2. then every matching entry of the global pull secret, most specific first;
//  3. then every matching entry the credential provider plugins returned for the image, in
//     the order of the CredentialProviderConfig's providers (like the kubelet), each most
//     specific first. These are node credentials too, tried after the global pull secret.
//
// Candidates with identical credential material are listed once, at their first place.
// Nothing matching means anonymous access; like the kubelet, a pod that has matching
// credentials never falls back to anonymous access.
type Keyring struct {
	pod    []Config
	global []Config
	node   []Config
}

// NewKeyring returns a keyring over the global pull secret (nil when there is none) and the
// pod's parsed imagePullSecrets, in the pod's order.
func NewKeyring(global *Config, pod ...Config) *Keyring {
	k := &Keyring{pod: slices.Clone(pod)}
	if global != nil {
		k.global = []Config{*global}
	}
	return k
}

// WithNode returns a keyring that also holds the given credential provider plugins' credentials,
// tried after the global pull secret. The receiver is not changed.
func (k *Keyring) WithNode(cfgs ...Config) *Keyring {
	if len(cfgs) == 0 {
		return k
	}
	return &Keyring{pod: k.pod, global: k.global, node: append(slices.Clone(k.node), cfgs...)}
}

// Lookup returns the candidate credentials for an image reference (short names,
// registry ports, tags and digests allowed), in the order documented on Keyring.
func (k *Keyring) Lookup(image string) (Candidates, error) {
	t, err := parseTarget(image)
	if err != nil {
		return nil, err
	}
	var out Candidates
	seen := map[Identity]bool{}
	groups := [][]Config{k.pod, k.global}
	for _, cfg := range k.node {
		// Each plugin's response is one group: providers keep their configured order.
		groups = append(groups, []Config{cfg})
	}
	for _, group := range groups {
		for _, m := range matchGroup(group, t) {
			id := m.Auth.Identity()
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, Credential{Auth: m.Auth, Source: m.source, Pattern: m.Pattern})
		}
	}
	return out, nil
}

type match struct {
	Entry
	source Source
}

// matchGroup returns the entries of cfgs that apply to t, most specific first; the sort is
// stable, so equally specific entries keep the order of cfgs.
func matchGroup(cfgs []Config, t target) []match {
	var ms []match
	for _, cfg := range cfgs {
		for _, e := range cfg.Entries {
			if e.key.matches(t) {
				ms = append(ms, match{Entry: e, source: cfg.Source})
			}
		}
	}
	slices.SortStableFunc(ms, func(a, b match) int { return compareSpecificity(a.key, b.key) })
	return ms
}
