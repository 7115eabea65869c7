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

package mirrorsets

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultMaxMirrors bounds the mirrors one drop-in renders. The objects are cluster-admin's,
// but every inspection of a matching image walks its source's list, so the list is bounded
// anyway; OpenShift clusters carry a few dozen.
const DefaultMaxMirrors = 1000

// maxProblems bounds the invalid entries named one by one (they end up in a condition message).
const maxProblems = 10

// header opens the drop-in, for whoever reads the mounted file.
const header = "# Rendered by the archgate operator from the cluster's ImageDigestMirrorSet and ImageTagMirrorSet objects.\n"

// Result is a rendered drop-in.
type Result struct {
	// Content is the registries.conf drop-in; "" when no entry applies.
	Content string
	// InEffect names the objects with at least one entry rendered ("ImageDigestMirrorSet a").
	InEffect []string
	// Problems name each entry left out: object, field, value and why.
	Problems []string
}

// Render renders sets as a registries.conf drop-in, the way OpenShift's machine-config
// operator renders them for CRI-O:
//   - every entry's source is one [[registry]] (a "*.domain" source is a wildcard prefix);
//     entries for the same source, across objects, are merged into it in order: digest mirror
//     sets before tag mirror sets, each sorted by name, entries in their object's order, a
//     repeated mirror kept once;
//   - an ImageDigestMirrorSet's mirrors are used for pulls by digest only
//     (pull-from-mirror = "digest-only"), an ImageTagMirrorSet's for pulls by tag only;
//   - mirrorSourcePolicy NeverContactSource in any entry blocks the source (blocked = true):
//     only its mirrors are contacted;
//   - an entry whose source, mirrors or policy is invalid (or that FromUnstructured could not
//     read, Set.Problems) is left out whole and reported, at most maxProblems of them by name;
//   - at most maxMirrors mirrors are rendered: the entry that would exceed them, and every
//     entry after it, are left out and reported.
func Render(sets []Set, maxMirrors int) (Result, error) {
	sets = slices.Clone(sets)
	slices.SortStableFunc(sets, func(a, b Set) int {
		return cmp.Or(cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)), strings.Compare(a.Name, b.Name))
	})
	var res Result
	m := merger{max: maxMirrors, bySource: map[string]*sysregistriesv2.Registry{}}
	for _, set := range sets {
		for _, p := range set.Problems {
			res.Problems = append(res.Problems, fmt.Sprintf("%s %s: %s", set.Kind, set.Name, p))
		}
		applied := false
		for _, e := range set.Entries {
			ok, problem := m.add(set.Kind, set.Name, e)
			if problem != "" {
				res.Problems = append(res.Problems, fmt.Sprintf("%s %s: %s", set.Kind, set.Name, problem))
			}
			applied = applied || ok
		}
		if applied {
			res.InEffect = append(res.InEffect, set.Kind+" "+set.Name)
		}
	}
	if len(res.Problems) > maxProblems {
		res.Problems = append(res.Problems[:maxProblems], fmt.Sprintf("%d more invalid entries", len(res.Problems)-maxProblems))
	}
	if m.leftOut > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d entries (%d mirrors) left out, from %s on: at most %d mirrors are rendered",
			m.leftOut, m.leftOutMirrors, m.firstLeftOut, maxMirrors))
	}
	content, err := m.encode()
	if err != nil {
		return Result{}, err
	}
	res.Content = content
	return res, nil
}

func kindOrder(kind string) int {
	if kind == DigestKind {
		return 0
	}
	return 1
}

// merger collects the registries by source.
type merger struct {
	max      int
	rendered int
	// leftOut and leftOutMirrors count the entries and their new mirrors beyond max;
	// firstLeftOut names the first entry left out.
	leftOut, leftOutMirrors int
	firstLeftOut            string
	bySource                map[string]*sysregistriesv2.Registry
}

// add merges one entry and reports whether it did; problem says why an invalid entry is left
// out (an entry beyond the limit is counted instead, and reported once by Render).
func (m *merger) add(kind, name string, e Entry) (applied bool, problem string) {
	if err := checkSource(e.Source); err != nil {
		return false, fmt.Sprintf("%s.source %q: %v", e.Field, e.Source, err)
	}
	for i, mirror := range e.Mirrors {
		if err := checkRepository(mirror); err != nil {
			return false, fmt.Sprintf("%s.mirrors[%d] %q: %v", e.Field, i, mirror, err)
		}
	}
	if e.Policy != "" && e.Policy != AllowContactingSource && e.Policy != NeverContactSource {
		return false, fmt.Sprintf("%s.mirrorSourcePolicy %q: want %s or %s", e.Field, e.Policy, AllowContactingSource, NeverContactSource)
	}
	pull := sysregistriesv2.MirrorByDigestOnly
	if kind == TagKind {
		pull = sysregistriesv2.MirrorByTagOnly
	}
	reg := m.bySource[e.Source]
	var added []sysregistriesv2.Endpoint
	for _, mirror := range e.Mirrors {
		ep := sysregistriesv2.Endpoint{Location: mirror, PullFromMirror: pull}
		if (reg == nil || !slices.Contains(reg.Mirrors, ep)) && !slices.Contains(added, ep) {
			added = append(added, ep)
		}
	}
	if m.leftOut > 0 || m.rendered+len(added) > m.max {
		if m.leftOut == 0 {
			m.firstLeftOut = fmt.Sprintf("%s %s %s", kind, name, e.Field)
		}
		m.leftOut++
		m.leftOutMirrors += len(added)
		return false, ""
	}
	if reg == nil {
		reg = &sysregistriesv2.Registry{Prefix: e.Source}
		if !strings.HasPrefix(e.Source, "*.") {
			reg.Location = e.Source // a wildcard prefix has no location of its own
		}
		m.bySource[e.Source] = reg
	}
	reg.Mirrors = append(reg.Mirrors, added...)
	reg.Blocked = reg.Blocked || e.Policy == NeverContactSource
	m.rendered += len(added)
	return true, ""
}

// encode writes the registries sorted by prefix, so that the same objects render the same
// bytes (the content is hashed into the controller's pod template), with containers/image's
// own TOML types and BurntSushi/toml, the encoder it parses with.
func (m *merger) encode() (string, error) {
	if len(m.bySource) == 0 {
		return "", nil
	}
	var conf struct {
		Registries []sysregistriesv2.Registry `toml:"registry"`
	}
	for _, source := range slices.Sorted(maps.Keys(m.bySource)) {
		conf.Registries = append(conf.Registries, *m.bySource[source])
	}
	var buf bytes.Buffer
	buf.WriteString(header)
	if err := toml.NewEncoder(&buf).Encode(conf); err != nil {
		return "", fmt.Errorf("encoding the mirror sets' registries.conf drop-in: %w", err)
	}
	return buf.String(), nil
}

// checkSource accepts what the OpenShift API does: a repository, a host[:port], or a
// "*.domain" wildcard.
func checkSource(s string) error {
	if domain, ok := strings.CutPrefix(s, "*."); ok {
		if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
			return fmt.Errorf("a wildcard source is \"*.\" and a domain: %s", strings.Join(errs, "; "))
		}
		return nil
	}
	return checkRepository(s)
}

// checkRepository accepts a host[:port] or a repository without tag or digest, in the
// reference grammar podman rewrites pulls with (not normalized: "docker.io/library" is a
// repository prefix, not docker.io/library/library).
func checkRepository(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if !strings.Contains(s, "/") {
		// A host alone: the grammar has no rule for it ("localhost:5000" would be a name and a
		// tag), so it is checked as the host of a repository under it.
		ref, err := reference.Parse(s + "/x")
		if named, ok := ref.(reference.Named); err != nil || !ok || reference.Domain(named) != s {
			return errors.New("want a host[:port] or a repository such as registry.example.com/team/app")
		}
		return nil
	}
	ref, err := reference.Parse(s)
	if err != nil {
		return fmt.Errorf("want a repository such as registry.example.com/team/app: %v", err)
	}
	if named, ok := ref.(reference.Named); !ok || !reference.IsNameOnly(named) {
		return errors.New("want a repository without tag or digest")
	}
	return nil
}
