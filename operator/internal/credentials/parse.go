// Package credentials turns Kubernetes pull secrets into registry credentials and chooses,
// for one image reference, the ordered credentials the kubelet would try.
//
// Everything here is pure: no client, no I/O, no logging. Errors name the secret
// (namespace/name), the data key and what is wrong, and never include secret values.
package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AuthConfig is the credential material of one registry entry of a pull secret.
//
// Its String and GoString methods redact the values, so that a stray %v in a log line
// does not leak them.
type AuthConfig struct {
	// Username and Password are the basic credentials (from "auth" or "username"/"password").
	Username string
	Password string
	// IdentityToken is an OAuth2 refresh token ("identitytoken").
	IdentityToken string
	// RegistryToken is a bearer token sent as is ("registrytoken").
	RegistryToken string
}

// String redacts the credential material.
func (a AuthConfig) String() string { return "AuthConfig{<redacted>}" }

// GoString redacts the credential material.
func (a AuthConfig) GoString() string { return a.String() }

// IsZero reports whether the entry carries no credential material at all.
func (a AuthConfig) IsZero() bool { return a == AuthConfig{} }

// Source names the secret a credential came from, for diagnostics.
type Source struct {
	Namespace string
	Name      string
	// Global marks the cluster-wide pull secret (ClusterPodPlacementConfig globalPullSecretRef).
	Global bool
	// Plugin names the kubelet credential provider plugin that returned the credential
	// (Namespace and Name are empty then).
	Plugin string
}

// String returns "namespace/name", prefixed with "global " for the global pull secret, or
// "credential provider <name>" for a plugin's credential.
func (s Source) String() string {
	if s.Plugin != "" {
		return "credential provider " + s.Plugin
	}
	name := s.Name
	if s.Namespace != "" {
		name = s.Namespace + "/" + s.Name
	}
	if s.Global {
		return "global " + name
	}
	return name
}

// Entry is one registry entry of a pull secret: where it applies and what it sends.
type Entry struct {
	// Pattern is the normalised registry key (host[:port][/path], wildcards allowed).
	Pattern string
	// Auth is the credential material.
	Auth AuthConfig

	key pattern
	loc string // the key as written in the secret
}

// Config is a parsed pull secret.
type Config struct {
	Source Source
	// Entries are sorted by Pattern (then by the key as written) so that parsing is deterministic.
	Entries []Entry
}

// Identities returns the identities of all entries, for example to invalidate what was
// cached under an outdated global pull secret.
func (c Config) Identities() []Identity {
	ids := make([]Identity, 0, len(c.Entries))
	for _, e := range c.Entries {
		id := e.Auth.Identity()
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// StaleIdentities returns the identities of before that after no longer has: what to
// invalidate in caches when a pull secret changes from before to after. Entries whose
// material did not change keep their identity and need no invalidation.
func StaleIdentities(before, after Config) []Identity {
	keep := after.Identities()
	var stale []Identity
	for _, id := range before.Identities() {
		if !slices.Contains(keep, id) {
			stale = append(stale, id)
		}
	}
	return stale
}

// ParseError reports a pull secret that cannot be used. It never carries secret values.
type ParseError struct {
	Source Source
	// Key is the secret data key (".dockerconfigjson" or ".dockercfg"), empty when the
	// problem is the secret itself (for example its type).
	Key string
	// Reason says what is wrong.
	Reason string
}

func (e *ParseError) Error() string {
	if e.Source.Plugin != "" {
		return fmt.Sprintf("%s: %s", e.Source, e.Reason)
	}
	if e.Key == "" {
		return fmt.Sprintf("pull secret %s: %s", e.Source, e.Reason)
	}
	return fmt.Sprintf("pull secret %s key %s: %s", e.Source, e.Key, e.Reason)
}

// ParseSecret parses a pull secret of type kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg. global marks the cluster-wide pull secret.
func ParseSecret(secret *corev1.Secret, global bool) (Config, error) {
	if secret == nil {
		return Config{}, errors.New("pull secret is nil")
	}
	src := Source{Namespace: secret.Namespace, Name: secret.Name, Global: global}
	switch secret.Type {
	case corev1.SecretTypeDockerConfigJson:
		return ParseDockerConfigJSON(src, secret.Data[corev1.DockerConfigJsonKey])
	case corev1.SecretTypeDockercfg:
		return ParseDockercfg(src, secret.Data[corev1.DockerConfigKey])
	default:
		return Config{}, &ParseError{Source: src, Reason: fmt.Sprintf("type %q is not %q or %q",
			secret.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)}
	}
}

// ParseDockerConfigJSON parses the value of a ".dockerconfigjson" key:
// {"auths": {"registry": {"auth": "base64(user:pass)" | "username", "password", "identitytoken", "registrytoken"}}}.
func ParseDockerConfigJSON(src Source, data []byte) (Config, error) {
	const key = corev1.DockerConfigJsonKey
	if len(data) == 0 {
		return Config{}, &ParseError{Source: src, Key: key, Reason: "missing or empty"}
	}
	var doc struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Config{}, &ParseError{Source: src, Key: key, Reason: safeJSONError(err)}
	}
	if doc.Auths == nil {
		return Config{}, &ParseError{Source: src, Key: key, Reason: `no "auths" object`}
	}
	return parseEntries(src, key, doc.Auths)
}

// ParseDockercfg parses the value of a legacy ".dockercfg" key: {"registry": {...}}.
func ParseDockercfg(src Source, data []byte) (Config, error) {
	const key = corev1.DockerConfigKey
	if len(data) == 0 {
		return Config{}, &ParseError{Source: src, Key: key, Reason: "missing or empty"}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return Config{}, &ParseError{Source: src, Key: key, Reason: safeJSONError(err)}
	}
	if doc == nil {
		return Config{}, &ParseError{Source: src, Key: key, Reason: "not a JSON object"}
	}
	return parseEntries(src, key, doc)
}

// dockerConfigEntry is one registry entry as Docker writes it.
type dockerConfigEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

func parseEntries(src Source, key string, raw map[string]json.RawMessage) (Config, error) {
	cfg := Config{Source: src, Entries: make([]Entry, 0, len(raw))}
	for loc, msg := range raw {
		where := "entry " + displayPattern(loc)
		p, err := parsePattern(loc)
		if err != nil {
			return Config{}, &ParseError{Source: src, Key: key, Reason: fmt.Sprintf("%s: %v", where, err)}
		}
		var de dockerConfigEntry
		if err := json.Unmarshal(msg, &de); err != nil {
			return Config{}, &ParseError{Source: src, Key: key, Reason: fmt.Sprintf("%s: %s", where, safeJSONError(err))}
		}
		auth, err := de.toAuthConfig()
		if err != nil {
			return Config{}, &ParseError{Source: src, Key: key, Reason: fmt.Sprintf("%s: %v", where, err)}
		}
		cfg.Entries = append(cfg.Entries, Entry{Pattern: p.String(), Auth: auth, key: p, loc: loc})
	}
	sortEntries(cfg.Entries)
	return cfg, nil
}

// sortEntries orders entries by pattern. Two spellings of one registry
// ("https://index.docker.io/v1/" and "docker.io") both stay, ordered by how they were written,
// so that parsing is deterministic.
func sortEntries(entries []Entry) {
	slices.SortFunc(entries, func(a, b Entry) int {
		if c := strings.Compare(a.Pattern, b.Pattern); c != 0 {
			return c
		}
		return strings.Compare(a.loc, b.loc)
	})
}

// NewConfig builds a Config from credentials keyed by registry pattern (host[:port][/path],
// globs allowed in the host), such as the auth map of a kubelet credential provider response.
// Entries with no credential material at all are skipped: they would be anonymous access.
func NewConfig(src Source, auths map[string]AuthConfig) (Config, error) {
	cfg := Config{Source: src, Entries: make([]Entry, 0, len(auths))}
	for loc, auth := range auths {
		if auth.IsZero() {
			continue
		}
		p, err := parsePattern(loc)
		if err != nil {
			return Config{}, &ParseError{Source: src, Reason: fmt.Sprintf("entry %s: %v", displayPattern(loc), err)}
		}
		cfg.Entries = append(cfg.Entries, Entry{Pattern: p.String(), Auth: auth, key: p, loc: loc})
	}
	sortEntries(cfg.Entries)
	return cfg, nil
}

func (de dockerConfigEntry) toAuthConfig() (AuthConfig, error) {
	a := AuthConfig{
		Username:      de.Username,
		Password:      de.Password,
		IdentityToken: de.IdentityToken,
		RegistryToken: de.RegistryToken,
	}
	if de.Auth != "" {
		// Like Docker and the kubelet, a decoded "auth" wins over "username"/"password".
		decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(de.Auth))
		if err != nil {
			var corrupt base64.CorruptInputError
			if errors.As(err, &corrupt) {
				return AuthConfig{}, fmt.Errorf(`"auth" is not valid base64 (at byte %d)`, int64(corrupt))
			}
			return AuthConfig{}, errors.New(`"auth" is not valid base64`)
		}
		user, pass, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return AuthConfig{}, errors.New(`"auth" does not decode to "username:password"`)
		}
		a.Username, a.Password = user, pass
	}
	if a.IsZero() {
		return AuthConfig{}, errors.New(`no credentials ("auth", "username"/"password", "identitytoken" or "registrytoken")`)
	}
	if a.Username != "" && a.Password == "" && a.IdentityToken == "" && a.RegistryToken == "" {
		return AuthConfig{}, errors.New(`"username" without "password"`)
	}
	return a, nil
}

// safeJSONError describes a JSON decoding error without quoting any of the input, which may
// be secret.
func safeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte offset %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("JSON field %q has the wrong type (%s)", typ.Field, typ.Value)
		}
		return fmt.Sprintf("JSON value has the wrong type (%s)", typ.Value)
	default:
		return "malformed JSON"
	}
}

// displayPattern returns a registry key for an error message. A key with user info
// ("https://user:pass@host") is never echoed.
func displayPattern(loc string) string {
	if strings.Contains(loc, "@") {
		return "<key with user info>"
	}
	return fmt.Sprintf("%q", loc)
}
