// Package credprovider runs the kubelet's credential provider plugins (ecr-credential-provider,
// the GCP and Azure providers, ...) as a credential source of the pod placement controller, so
// that images a node pulls with a plugin's credentials can be inspected with the same ones.
//
// The configuration is the kubelet's own CredentialProviderConfig (k8s.io/kubelet/config/v1)
// and the plugins speak the kubelet's exec protocol (k8s.io/kubelet/pkg/apis/credentialprovider):
// a CredentialProviderRequest on stdin, a CredentialProviderResponse on stdout. The kubelet's
// runner and matchImages rules live in k8s.io/kubernetes/pkg/credentialprovider/plugin, which the
// operator module must not import (k8s.io/kubernetes is not meant to be a library and pulls in
// the whole tree), and no maintained library exposes them; so this package holds a small runner
// over the published API types, and the image-matching rules are those of package credentials
// (the kubelet uses the same rules for pull-secret keys and matchImages).
package credprovider

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/internal/credentials"
)

// ConfigKind is the kind of a CredentialProviderConfig.
const ConfigKind = "CredentialProviderConfig"

// configAPIVersions are the CredentialProviderConfig versions accepted: the kubelet's v1 and
// v1beta1, whose fields used here are identical.
var configAPIVersions = []string{"kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v1beta1"}

// pluginAPIVersions are the exec protocol versions the kubelet speaks; their request and
// response are identical, so one set of types serves all.
var pluginAPIVersions = []string{
	"credentialprovider.kubelet.k8s.io/v1",
	"credentialprovider.kubelet.k8s.io/v1beta1",
	"credentialprovider.kubelet.k8s.io/v1alpha1",
}

// ParseConfig decodes and validates a CredentialProviderConfig (YAML or JSON). Unknown fields
// are errors, so that a typo does not silently disable a setting. Errors name the provider and
// the field.
func ParseConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	cfg := &kubeletconfigv1.CredentialProviderConfig{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("decoding the CredentialProviderConfig: %w", err)
	}
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadConfig reads and validates a CredentialProviderConfig file.
func LoadConfig(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the credential provider config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// validateConfig applies the kubelet's rules, and refuses what this runner does not support.
func validateConfig(cfg *kubeletconfigv1.CredentialProviderConfig) error {
	var errs []error
	if cfg.Kind != ConfigKind {
		errs = append(errs, fmt.Errorf("kind is %q, want %q", cfg.Kind, ConfigKind))
	}
	if !slices.Contains(configAPIVersions, cfg.APIVersion) {
		errs = append(errs, fmt.Errorf("apiVersion is %q, want one of %s", cfg.APIVersion, strings.Join(configAPIVersions, ", ")))
	}
	if len(cfg.Providers) == 0 {
		errs = append(errs, errors.New("providers: at least one provider is required"))
	}
	seen := map[string]bool{}
	for i, p := range cfg.Providers {
		at := fmt.Sprintf("providers[%d]", i)
		if p.Name != "" {
			at = fmt.Sprintf("providers[%d] (%s)", i, p.Name)
		}
		for _, err := range validateProvider(p) {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("%s: name: duplicate name %q", at, p.Name))
		}
		seen[p.Name] = true
	}
	return errors.Join(errs...)
}

func validateProvider(p kubeletconfigv1.CredentialProvider) []error {
	var errs []error
	switch {
	case p.Name == "":
		errs = append(errs, errors.New("name: required"))
	case p.Name == "." || p.Name == ".." || strings.ContainsAny(p.Name, `/\`):
		// The name is the executable's file name in the binary directory: no path.
		errs = append(errs, fmt.Errorf("name: %q must be a file name, without path separators", p.Name))
	}
	if len(p.MatchImages) == 0 {
		errs = append(errs, errors.New("matchImages: at least one pattern is required"))
	}
	for j, m := range p.MatchImages {
		if err := credentials.ValidatePattern(m); err != nil {
			errs = append(errs, fmt.Errorf("matchImages[%d]: %q: %w", j, m, err))
		}
	}
	switch {
	case p.DefaultCacheDuration == nil:
		errs = append(errs, errors.New("defaultCacheDuration: required"))
	case p.DefaultCacheDuration.Duration < 0:
		errs = append(errs, fmt.Errorf("defaultCacheDuration: %s must not be negative", p.DefaultCacheDuration.Duration))
	}
	if !slices.Contains(pluginAPIVersions, p.APIVersion) {
		errs = append(errs, fmt.Errorf("apiVersion: %q, want one of %s", p.APIVersion, strings.Join(pluginAPIVersions, ", ")))
	}
	for j, e := range p.Env {
		if e.Name == "" || strings.Contains(e.Name, "=") {
			errs = append(errs, fmt.Errorf("env[%d]: name %q must be non-empty and contain no '='", j, e.Name))
		}
	}
	if p.TokenAttributes != nil {
		// Service-account-token plugins need a token bound to each pod's service account; the
		// controller cannot mint those, and a pod-scoped credential is not a node credential.
		errs = append(errs, errors.New("tokenAttributes: service-account-token plugins are not supported: leave this provider out of the configuration archgate reads"))
	}
	return errs
}
