package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func secret(typ corev1.SecretType, key, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pull"},
		Type:       typ,
		Data:       map[string][]byte{key: []byte(value)},
	}
}

// entrySummary is what the parse tests compare: pattern and material, no unexported fields.
type entrySummary struct {
	Pattern string
	Auth    AuthConfig
}

func summarize(cfg Config) []entrySummary {
	var out []entrySummary
	for _, e := range cfg.Entries {
		out = append(out, entrySummary{Pattern: e.Pattern, Auth: e.Auth})
	}
	return out
}

func TestParseSecret(t *testing.T) {
	const hidden = "s3cr3t-Value"
	tests := map[string]struct {
		secret      *corev1.Secret
		wantEntries []entrySummary
		wantErr     string // substring; "" means no error
	}{
		"dockerconfigjson with auth": {
			secret: secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
				`{"auths":{"registry.example:5000":{"auth":"`+b64("alice:pa:ss")+`"}}}`),
			wantEntries: []entrySummary{{Pattern: "registry.example:5000", Auth: AuthConfig{Username: "alice", Password: "pa:ss"}}},
		},
		"dockerconfigjson auth wins over username and password": {
			secret: secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
				`{"auths":{"r.example":{"auth":"`+b64("alice:one")+`","username":"bob","password":"two"}}}`),
			wantEntries: []entrySummary{{Pattern: "r.example", Auth: AuthConfig{Username: "alice", Password: "one"}}},
		},
		"dockerconfigjson username password and tokens": {
			secret: secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
				`{"auths":{"https://r.example/v2/":{"username":"u","password":"p"},"q.example/team":{"identitytoken":"it","email":"x@y"},"t.example":{"registrytoken":"rt"}}}`),
			wantEntries: []entrySummary{
				{Pattern: "q.example/team", Auth: AuthConfig{IdentityToken: "it"}},
				{Pattern: "r.example", Auth: AuthConfig{Username: "u", Password: "p"}},
				{Pattern: "t.example", Auth: AuthConfig{RegistryToken: "rt"}},
			},
		},
		"dockerconfigjson docker hub spellings are all docker.io and both kept": {
			secret: secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
				`{"auths":{"https://index.docker.io/v1/":{"auth":"`+b64("a:1")+`"},"docker.io":{"auth":"`+b64("b:2")+`"}}}`),
			wantEntries: []entrySummary{
				{Pattern: "docker.io", Auth: AuthConfig{Username: "b", Password: "2"}},
				{Pattern: "docker.io", Auth: AuthConfig{Username: "a", Password: "1"}},
			},
		},
		"dockerconfigjson empty auths": {
			secret:      secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{}}`),
			wantEntries: nil,
		},
		"dockercfg legacy": {
			secret: secret(corev1.SecretTypeDockercfg, corev1.DockerConfigKey,
				`{"*.registry.example":{"auth":"`+b64("w:x")+`"},"HTTP://Registry.Example/Team/":{"username":"u","password":"p"}}`),
			wantEntries: []entrySummary{
				{Pattern: "*.registry.example", Auth: AuthConfig{Username: "w", Password: "x"}},
				{Pattern: "registry.example/Team/", Auth: AuthConfig{Username: "u", Password: "p"}},
			},
		},
		"wrong type": {
			secret:  secret(corev1.SecretTypeOpaque, corev1.DockerConfigJsonKey, `{"auths":{}}`),
			wantErr: `pull secret team-a/pull: type "Opaque" is not`,
		},
		"missing key": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, "other", `{}`),
			wantErr: "pull secret team-a/pull key .dockerconfigjson: missing or empty",
		},
		"malformed json does not echo the input": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.example":{"auth":"`+hidden),
			wantErr: "key .dockerconfigjson: malformed JSON",
		},
		"no auths object": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"r.example":{"auth":"eDp5"}}`),
			wantErr: `key .dockerconfigjson: no "auths" object`,
		},
		"auth not base64": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.example":{"auth":"`+hidden+`!"}}}`),
			wantErr: `key .dockerconfigjson: entry "r.example": "auth" is not valid base64`,
		},
		"auth without colon": {
			secret:  secret(corev1.SecretTypeDockercfg, corev1.DockerConfigKey, `{"r.example":{"auth":"`+b64(hidden)+`"}}`),
			wantErr: `key .dockercfg: entry "r.example": "auth" does not decode to "username:password"`,
		},
		"entry without credentials": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.example":{"email":"a@b"}}}`),
			wantErr: `entry "r.example": no credentials`,
		},
		"username without password": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.example":{"username":"`+hidden+`"}}}`),
			wantErr: `entry "r.example": "username" without "password"`,
		},
		"wrong field type": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.example":{"password":12345}}}`),
			wantErr: `entry "r.example": JSON field "password" has the wrong type (number)`,
		},
		"key with user info is not echoed": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"https://me:`+hidden+`@r.example":{"auth":"eDp5"}}}`),
			wantErr: "entry <key with user info>: registry key contains user info",
		},
		"malformed port": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.example:":{"auth":"eDp5"}}}`),
			wantErr: `entry "r.example:": registry host has a malformed port`,
		},
		"malformed wildcard": {
			secret:  secret(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"[a.r.example":{"auth":"eDp5"}}}`),
			wantErr: `entry "[a.r.example":`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := ParseSecret(tc.secret, false)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseSecret() error = nil, want %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseSecret() error = %q, want it to contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), hidden) || strings.Contains(err.Error(), b64(hidden)) {
					t.Errorf("ParseSecret() error %q leaks the secret value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSecret() error = %v", err)
			}
			if diff := cmp.Diff(tc.wantEntries, summarize(cfg)); diff != "" {
				t.Errorf("ParseSecret() entries mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Source{Namespace: "team-a", Name: "pull"}, cfg.Source); diff != "" {
				t.Errorf("ParseSecret() source mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthConfigFormattingRedacts(t *testing.T) {
	a := AuthConfig{Username: "alice", Password: "hunter2", IdentityToken: "tok", RegistryToken: "rtok"}
	for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
		for _, v := range []any{a, Credential{Auth: a}, Candidates{{Auth: a}}} {
			got := fmt.Sprintf(verb, v)
			for _, secret := range []string{"hunter2", "tok", "rtok"} {
				if strings.Contains(got, secret) {
					t.Errorf("fmt.Sprintf(%q, %T) = %q leaks %q", verb, v, got, secret)
				}
			}
		}
	}
}

// FuzzParsePullSecret parses arbitrary bytes as a pull secret of both types, the way the
// controller reads the pods' and the global pull secrets: nothing may panic, a failure is a
// *ParseError that never quotes the secret's bytes, a success is deterministic, every entry
// carries credentials, and looking an image up in the resulting keyring works.
func FuzzParsePullSecret(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example":{"auth":"`+b64("u:p")+`"}}}`), false)
	f.Add([]byte(`{"auths":{"*.registry.example/team":{"username":"u","password":"p"},"https://index.docker.io/v1/":{"identitytoken":"t"}}}`), false)
	f.Add([]byte(`{"registry.example:5000":{"auth":"`+b64("u:p")+`"}}`), true)
	f.Add([]byte(`{"auths":{"https://user:secret@registry.example":{"auth":"%%%"}}}`), false)
	f.Add([]byte(`{"auths":null}`), false)
	f.Fuzz(func(t *testing.T, data []byte, dockercfg bool) {
		typ, key := corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey
		if dockercfg {
			typ, key = corev1.SecretTypeDockercfg, corev1.DockerConfigKey
		}
		s := secret(typ, key, string(data))
		cfg, err := ParseSecret(s, false)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			// No credential value in the message (registry keys may be named; values never).
			for _, v := range secretValues(data) {
				if len(v) >= 8 && strings.Contains(err.Error(), v) && !strings.Contains(parseVocabulary, v) {
					t.Errorf("error %q quotes the credential value %q", err, v)
				}
			}
			return
		}
		again, err := ParseSecret(s, false)
		if err != nil || !cmp.Equal(cfg, again, cmp.AllowUnexported(Entry{}, pattern{})) {
			t.Fatalf("parsing twice differs: %v", err)
		}
		for _, e := range cfg.Entries {
			if e.Auth.IsZero() {
				t.Errorf("entry %q has no credentials", e.Pattern)
			}
		}
		for _, image := range []string{"registry.example/app:1", "docker.io/library/nginx", "registry.example:5000/team/app@sha256:" + strings.Repeat("a", 64)} {
			if _, err := NewKeyring(&cfg).Lookup(image); err != nil {
				t.Errorf("Lookup(%q): %v", image, err)
			}
		}
	})
}

// parseVocabulary is every fixed word the parse errors use, so that a credential value that
// happens to spell one of them is not taken for a leak.
const parseVocabulary = `pull secret team-a/pull key .dockerconfigjson .dockercfg missing or empty no "auths" object ` +
	`not a JSON object malformed JSON at byte offset JSON field has the wrong type JSON value entry ` +
	`<key with user info> "auth" is not valid base64 (at byte "auth" does not decode to "username:password" ` +
	`no credentials ("auth", "username"/"password", "identitytoken" or "registrytoken") "username" without "password"`

// secretValues returns the credential values of a pull secret document, as encoding/json
// would read them (field names match case-insensitively), with "auth" also decoded.
func secretValues(data []byte) []string {
	var doc any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, e := range m {
			if str, ok := e.(string); ok {
				switch strings.ToLower(k) {
				case "auth":
					out = append(out, str)
					if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(str)); err == nil {
						user, pass, _ := strings.Cut(string(dec), ":")
						out = append(out, user, pass)
					}
				case "username", "password", "identitytoken", "registrytoken":
					out = append(out, str)
				}
			}
			walk(e)
		}
	}
	walk(doc)
	return out
}
