package inspect

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// ShortNames are registries.conf's rules for short names ("nginx", "team/app:1"): images that
// name no registry.
type ShortNames struct {
	// Search is unqualified-search-registries, in order. Empty keeps the default: docker.io.
	Search []string
	// Mode is short-name-mode (permissive when registries.conf leaves it unset).
	Mode types.ShortNameMode
	// Alias returns the [aliases] entry of a short name without tag or digest ("nginx",
	// "team/app"), or nil; nil means no aliases.
	Alias func(name string) (reference.Named, error)
	// HasAliases is set when registries.conf (or a drop-in) has an [aliases] table.
	HasAliases bool
}

// Remapped reports whether a short name may resolve to something else than docker.io, where
// the kubelet's (and archgate's webhook's) reading of short names puts it: then only the
// controller, which knows registries.conf, may place pods that name one.
func (s ShortNames) Remapped() bool {
	return s.HasAliases || !(len(s.Search) == 0 || (len(s.Search) == 1 && s.Search[0] == dockerHubDomain))
}

// Candidates returns the fully qualified references (ParseReference's form) to try, in order,
// for image as a pod names it. It follows CRI-O, which resolves a pod's image with
// containers/image's short-name rules and no terminal to prompt on:
//
//  1. a reference whose first component is a host (it has a "." or a ":", or is "localhost")
//     is not a short name: itself only;
//  2. a short name with an alias: the alias only, with the image's tag or digest;
//  3. a short name without search registries: docker.io, as the kubelet with containerd and
//     archgate without registries.conf do (CRI-O would refuse the pod's image);
//  4. otherwise each search registry in order, with the image's path, tag and digest
//     (docker.io adds library/ to one-component names); with short-name-mode enforcing and
//     more than one search registry the name is ambiguous, and an error, as CRI-O refuses it.
func (s ShortNames) Candidates(image string) ([]string, error) {
	image = strings.TrimSpace(image)
	ref, err := reference.Parse(image)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return nil, fmt.Errorf("parsing image reference %q: no repository", image)
	}
	if domain := reference.Domain(named); strings.ContainsAny(domain, ".:") || domain == "localhost" {
		return qualified(image)
	}
	if s.Alias != nil {
		alias, err := s.Alias(reference.TrimNamed(named).String())
		if err != nil {
			return nil, fmt.Errorf("looking up the short-name alias of %q: %w", image, err)
		}
		if alias != nil {
			return qualified(alias.String() + strings.TrimPrefix(image, reference.TrimNamed(named).String()))
		}
	}
	if len(s.Search) == 0 {
		return qualified(image)
	}
	if s.Mode == types.ShortNameModeEnforcing && len(s.Search) > 1 {
		return nil, fmt.Errorf("short name %q is ambiguous: registries.conf sets short-name-mode = \"enforcing\" and %d "+
			"unqualified-search-registries (%s); name the registry in the image or add an alias", image, len(s.Search), strings.Join(s.Search, ", "))
	}
	out := make([]string, 0, len(s.Search))
	for _, reg := range s.Search {
		c, err := qualified(reg + "/" + image)
		if err != nil {
			return nil, fmt.Errorf("unqualified-search registry %q: %w", reg, err)
		}
		out = append(out, c...)
	}
	return out, nil
}

// qualified is the one candidate ParseReference makes of image.
func qualified(image string) ([]string, error) {
	named, err := ParseReference(image)
	if err != nil {
		return nil, err
	}
	return []string{named.String()}, nil
}

// ShortNames reads the short-name rules of the configured registries.conf (and drop-ins).
// Without a registries.conf the rules are the default: docker.io.
func (o Options) ShortNames() (ShortNames, error) {
	if o.RegistriesConfPath == "" {
		return ShortNames{}, nil
	}
	sys := o.registriesConfContext()
	// Aliases are read from registries.conf and its drop-ins only: not from a user's alias
	// cache ($HOME/.cache/containers/short-name-aliases.conf), which podman would otherwise add.
	sys.UserShortNameAliasConfPath = filepath.Join(filepath.Dir(o.RegistriesConfPath), "no-short-name-aliases.conf")
	search, err := sysregistriesv2.UnqualifiedSearchRegistries(sys)
	if err != nil {
		return ShortNames{}, err
	}
	mode, err := sysregistriesv2.GetShortNameMode(sys)
	if err != nil {
		return ShortNames{}, err
	}
	hasAliases, err := o.hasAliases()
	if err != nil {
		return ShortNames{}, err
	}
	return ShortNames{Search: search, Mode: mode, HasAliases: hasAliases, Alias: func(name string) (reference.Named, error) {
		alias, _, err := sysregistriesv2.ResolveShortNameAlias(sys, name)
		return alias, err
	}}, nil
}

// hasAliases reports whether registries.conf or one of its drop-ins (*.conf) has aliases;
// podman answers alias lookups by name only.
func (o Options) hasAliases() (bool, error) {
	files := []string{o.RegistriesConfPath}
	if o.RegistriesConfDirPath != "" {
		dropIns, err := filepath.Glob(filepath.Join(o.RegistriesConfDirPath, "*.conf"))
		if err != nil {
			return false, err
		}
		files = append(files, dropIns...)
	}
	for _, f := range files {
		var conf struct {
			Aliases map[string]string `toml:"aliases"`
		}
		if _, err := toml.DecodeFile(f, &conf); err != nil {
			return false, fmt.Errorf("reading the aliases of %s: %w", f, err)
		}
		if len(conf.Aliases) > 0 {
			return true, nil
		}
	}
	return false, nil
}
