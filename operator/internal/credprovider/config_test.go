package credprovider

import (
	"strings"
	"testing"
)

const validConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: ecr-credential-provider
  matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example:5000/team"]
  defaultCacheDuration: 12h
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["get-credentials"]
  env:
  - name: AWS_PROFILE
    value: default
`

func TestParseConfig(t *testing.T) {
	replace := func(old, new string) string { return strings.Replace(validConfig, old, new, 1) }
	tests := []struct {
		name    string
		data    string
		wantErr string // "" when valid
	}{
		{name: "valid", data: validConfig},
		{name: "v1beta1 config", data: replace("kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v1beta1")},
		{name: "wrong kind", data: replace("kind: CredentialProviderConfig", "kind: KubeletConfiguration"), wantErr: `kind is "KubeletConfiguration"`},
		{name: "unknown config version", data: replace("kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v2"), wantErr: `apiVersion is "kubelet.config.k8s.io/v2"`},
		{name: "unknown field", data: replace("  args:", "  argz:"), wantErr: `unknown field "argz"`},
		{name: "no providers", data: "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n", wantErr: "at least one provider"},
		{name: "name with path", data: replace("name: ecr-credential-provider", "name: ../bin/ecr"), wantErr: `providers[0] (../bin/ecr): name: "../bin/ecr" must be a file name`},
		{name: "no matchImages", data: replace(`matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example:5000/team"]`, "matchImages: []"), wantErr: "matchImages: at least one pattern"},
		{name: "bad matchImages", data: replace(`"registry.example:5000/team"`, `"registry.example:port"`), wantErr: `matchImages[1]: "registry.example:port": registry key is not a host[:port][/path]`},
		{name: "no defaultCacheDuration", data: replace("  defaultCacheDuration: 12h\n", ""), wantErr: "defaultCacheDuration: required"},
		{name: "negative defaultCacheDuration", data: replace("defaultCacheDuration: 12h", "defaultCacheDuration: -1m"), wantErr: "defaultCacheDuration: -1m0s must not be negative"},
		{name: "unknown plugin version", data: replace("credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v9"), wantErr: `apiVersion: "credentialprovider.kubelet.k8s.io/v9"`},
		{name: "bad env name", data: replace("name: AWS_PROFILE", "name: A=B"), wantErr: `env[0]: name "A=B"`},
		{name: "token attributes", data: validConfig + "  tokenAttributes:\n    serviceAccountTokenAudience: x\n    cacheType: Token\n    requireServiceAccount: true\n", wantErr: "tokenAttributes: service-account-token plugins are not supported"},
		{name: "duplicate names", data: validConfig + strings.SplitN(validConfig, "providers:\n", 2)[1], wantErr: `providers[1] (ecr-credential-provider): name: duplicate name`},
		{name: "not YAML", data: "providers: [", wantErr: "decoding the CredentialProviderConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseConfig: %v", err)
				}
				if p := cfg.Providers[0]; p.Name != "ecr-credential-provider" || len(p.Args) != 1 || p.Env[0].Value != "default" {
					t.Fatalf("decoded %+v", p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseConfig error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
