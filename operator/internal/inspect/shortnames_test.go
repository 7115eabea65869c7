package inspect

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/types"
)

// TestShortNamesCandidates checks the resolution rule of short names, CRI-O's, case by case.
func TestShortNamesCandidates(t *testing.T) {
	const dgst = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	aliases := func(name string) (reference.Named, error) {
		if name == "tool" {
			return reference.ParseNormalizedNamed("quay.io/vendor/tool")
		}
		return nil, nil
	}
	search := []string{"registry.corp.example:5000", "docker.io"}
	tests := map[string]struct {
		rules     ShortNames
		image     string
		want      []string
		wantError string
	}{
		"no search registries: docker.io, as today":       {image: "nginx", want: []string{"docker.io/library/nginx:latest"}},
		"no search registries, two components":            {image: "team/app:1", want: []string{"docker.io/team/app:1"}},
		"a host is not a short name":                      {rules: ShortNames{Search: search}, image: "quay.io/team/app:1", want: []string{"quay.io/team/app:1"}},
		"a port makes a host":                             {rules: ShortNames{Search: search}, image: "registry:5000/app", want: []string{"registry:5000/app:latest"}},
		"localhost is a host":                             {rules: ShortNames{Search: search}, image: "localhost/app", want: []string{"localhost/app:latest"}},
		"docker.io written out is not a short name":       {rules: ShortNames{Search: search}, image: "docker.io/nginx", want: []string{"docker.io/library/nginx:latest"}},
		"search registries in order":                      {rules: ShortNames{Search: search}, image: "nginx", want: []string{"registry.corp.example:5000/nginx:latest", "docker.io/library/nginx:latest"}},
		"a first component without a dot is a path":       {rules: ShortNames{Search: search}, image: "team/app:1", want: []string{"registry.corp.example:5000/team/app:1", "docker.io/team/app:1"}},
		"digest kept, tag beside it dropped":              {rules: ShortNames{Search: search[:1]}, image: "app:1@" + dgst, want: []string{"registry.corp.example:5000/app@" + dgst}},
		"alias wins over search registries":               {rules: ShortNames{Search: search, Alias: aliases}, image: "tool:2", want: []string{"quay.io/vendor/tool:2"}},
		"alias keeps the digest":                          {rules: ShortNames{Search: search, Alias: aliases}, image: "tool@" + dgst, want: []string{"quay.io/vendor/tool@" + dgst}},
		"no alias for the name: search registries":        {rules: ShortNames{Search: search[:1], Alias: aliases}, image: "other", want: []string{"registry.corp.example:5000/other:latest"}},
		"enforcing with one search registry":              {rules: ShortNames{Search: search[:1], Mode: types.ShortNameModeEnforcing}, image: "nginx", want: []string{"registry.corp.example:5000/nginx:latest"}},
		"enforcing with an alias":                         {rules: ShortNames{Search: search, Mode: types.ShortNameModeEnforcing, Alias: aliases}, image: "tool", want: []string{"quay.io/vendor/tool:latest"}},
		"enforcing and ambiguous: refused":                {rules: ShortNames{Search: search, Mode: types.ShortNameModeEnforcing}, image: "nginx", wantError: `short name "nginx" is ambiguous`},
		"disabled tries every search registry":            {rules: ShortNames{Search: search, Mode: types.ShortNameModeDisabled}, image: "nginx", want: []string{"registry.corp.example:5000/nginx:latest", "docker.io/library/nginx:latest"}},
		"enforcing does not touch fully qualified images": {rules: ShortNames{Search: search, Mode: types.ShortNameModeEnforcing}, image: "quay.io/app", want: []string{"quay.io/app:latest"}},
		"invalid reference":                               {rules: ShortNames{Search: search}, image: "UPPER/app", wantError: "parsing image reference"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.rules.Candidates(tc.image)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("Candidates(%q) = %v, %v; want an error containing %q", tc.image, got, err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Candidates(%q) error = %v", tc.image, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Candidates(%q) mismatch (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

// TestOptionsShortNames reads the rules from a registries.conf with podman's loader.
func TestOptionsShortNames(t *testing.T) {
	cfg := newPodmanConfig(t, "unqualified-search-registries = [\"registry.corp.example\", \"docker.io\"]\nshort-name-mode = \"disabled\"\n\n[aliases]\n\"tool\" = \"quay.io/vendor/tool\"\n")
	ReloadRegistriesConf()
	t.Cleanup(ReloadRegistriesConf)
	rules, err := cfg.options().ShortNames()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"registry.corp.example", "docker.io"}, rules.Search); diff != "" {
		t.Errorf("Search mismatch (-want +got):\n%s", diff)
	}
	if rules.Mode != types.ShortNameModeDisabled {
		t.Errorf("Mode = %v, want disabled", rules.Mode)
	}
	if !rules.HasAliases || !rules.Remapped() {
		t.Errorf("HasAliases = %t, Remapped = %t; want both", rules.HasAliases, rules.Remapped())
	}
	got, err := rules.Candidates("tool:1")
	if err != nil || !cmp.Equal(got, []string{"quay.io/vendor/tool:1"}) {
		t.Errorf("Candidates(tool:1) = %v, %v; want the alias", got, err)
	}

	none, err := (Options{}).ShortNames()
	if err != nil || len(none.Search) != 0 || none.Alias != nil {
		t.Errorf("without registries.conf: %+v, %v; want the default", none, err)
	}
	empty := newPodmanConfig(t, "")
	rules, err = empty.options().ShortNames()
	if err != nil || len(rules.Search) != 0 || rules.Mode != types.ShortNameModePermissive {
		t.Errorf("an empty registries.conf: %+v, %v; want no search registries, permissive", rules, err)
	}
}

// TestShortNamesRemapped: only rules that may send a short name elsewhere than docker.io count.
func TestShortNamesRemapped(t *testing.T) {
	tests := map[string]struct {
		rules ShortNames
		want  bool
	}{
		"default":                 {},
		"docker.io only":          {rules: ShortNames{Search: []string{"docker.io"}}},
		"another registry":        {rules: ShortNames{Search: []string{"registry.corp.example"}}, want: true},
		"docker.io, then another": {rules: ShortNames{Search: []string{"docker.io", "quay.io"}}, want: true},
		"aliases":                 {rules: ShortNames{HasAliases: true}, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.rules.Remapped(); got != tc.want {
				t.Errorf("Remapped() = %t, want %t", got, tc.want)
			}
		})
	}
}
