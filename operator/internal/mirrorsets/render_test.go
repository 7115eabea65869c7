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
	"fmt"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/archgate/archgate/operator/internal/inspect"
)

func idms(name string, entries ...Entry) Set {
	return Set{Kind: DigestKind, Name: name, Entries: entries}
}

func itms(name string, entries ...Entry) Set { return Set{Kind: TagKind, Name: name, Entries: entries} }

func entry(field, source string, mirrors ...string) Entry {
	return Entry{Field: field, Source: source, Mirrors: mirrors}
}

func never(e Entry) Entry { e.Policy = NeverContactSource; return e }

func digestMirror(location string) sysregistriesv2.Endpoint {
	return sysregistriesv2.Endpoint{Location: location, PullFromMirror: sysregistriesv2.MirrorByDigestOnly}
}

func tagMirror(location string) sysregistriesv2.Endpoint {
	return sysregistriesv2.Endpoint{Location: location, PullFromMirror: sysregistriesv2.MirrorByTagOnly}
}

func registry(source string, mirrors ...sysregistriesv2.Endpoint) sysregistriesv2.Registry {
	return sysregistriesv2.Registry{Prefix: source, Endpoint: sysregistriesv2.Endpoint{Location: source}, Mirrors: mirrors}
}

func blocked(r sysregistriesv2.Registry) sysregistriesv2.Registry { r.Blocked = true; return r }

// manyMirrors is an entry with n distinct mirrors.
func manyMirrors(field, source string, n int) Entry {
	e := entry(field, source)
	for i := range n {
		e.Mirrors = append(e.Mirrors, fmt.Sprintf("mirror.example/m%d", i))
	}
	return e
}

func TestRender(t *testing.T) {
	tests := map[string]struct {
		sets           []Set
		max            int // DefaultMaxMirrors when 0
		wantRegistries []sysregistriesv2.Registry
		wantInEffect   []string
		wantProblems   []string
	}{
		"nothing": {},
		"digest mirrors are digest-only": {
			sets:           []Set{idms("a", entry("spec.imageDigestMirrors[0]", "quay.io/team", "mirror.example/team", "backup.example:5000/team"))},
			wantRegistries: []sysregistriesv2.Registry{registry("quay.io/team", digestMirror("mirror.example/team"), digestMirror("backup.example:5000/team"))},
			wantInEffect:   []string{"ImageDigestMirrorSet a"},
		},
		"tag mirrors are tag-only": {
			sets:           []Set{itms("a", entry("spec.imageTagMirrors[0]", "registry.example", "mirror.example"))},
			wantRegistries: []sysregistriesv2.Registry{registry("registry.example", tagMirror("mirror.example"))},
			wantInEffect:   []string{"ImageTagMirrorSet a"},
		},
		"NeverContactSource blocks the source": {
			sets:           []Set{idms("a", never(entry("spec.imageDigestMirrors[0]", "quay.io/team", "mirror.example/team")))},
			wantRegistries: []sysregistriesv2.Registry{blocked(registry("quay.io/team", digestMirror("mirror.example/team")))},
			wantInEffect:   []string{"ImageDigestMirrorSet a"},
		},
		"NeverContactSource in one object blocks the merged source": {
			sets: []Set{
				idms("a", entry("spec.imageDigestMirrors[0]", "quay.io/team", "mirror.example/team")),
				itms("b", never(entry("spec.imageTagMirrors[0]", "quay.io/team", "tags.example/team"))),
			},
			wantRegistries: []sysregistriesv2.Registry{blocked(registry("quay.io/team", digestMirror("mirror.example/team"), tagMirror("tags.example/team")))},
			wantInEffect:   []string{"ImageDigestMirrorSet a", "ImageTagMirrorSet b"},
		},
		"a wildcard source is a prefix without location": {
			sets: []Set{idms("a", entry("spec.imageDigestMirrors[0]", "*.corp.example", "mirror.example/corp"))},
			wantRegistries: []sysregistriesv2.Registry{{Prefix: "*.corp.example",
				Mirrors: []sysregistriesv2.Endpoint{digestMirror("mirror.example/corp")}}},
			wantInEffect: []string{"ImageDigestMirrorSet a"},
		},
		"one source across objects: digest sets, then tag sets, each by name; a repeated mirror once": {
			sets: []Set{
				itms("a-tags", entry("spec.imageTagMirrors[0]", "quay.io/team", "t1.example/team")),
				idms("z", entry("spec.imageDigestMirrors[0]", "quay.io/team", "z.example/team", "b.example/team")),
				idms("b", entry("spec.imageDigestMirrors[0]", "quay.io/team", "b.example/team")),
			},
			wantRegistries: []sysregistriesv2.Registry{registry("quay.io/team",
				digestMirror("b.example/team"), digestMirror("z.example/team"), tagMirror("t1.example/team"))},
			wantInEffect: []string{"ImageDigestMirrorSet b", "ImageDigestMirrorSet z", "ImageTagMirrorSet a-tags"},
		},
		"registries are sorted by source": {
			sets: []Set{idms("a",
				entry("spec.imageDigestMirrors[0]", "quay.io/z", "mirror.example/z"),
				entry("spec.imageDigestMirrors[1]", "docker.io/library", "mirror.example/library"))},
			wantRegistries: []sysregistriesv2.Registry{
				registry("docker.io/library", digestMirror("mirror.example/library")),
				registry("quay.io/z", digestMirror("mirror.example/z")),
			},
			wantInEffect: []string{"ImageDigestMirrorSet a"},
		},
		"mirrors beyond the cap are left out and reported": {
			max: 3,
			sets: []Set{
				idms("a", manyMirrors("spec.imageDigestMirrors[0]", "quay.io/a", 2)),
				idms("b", manyMirrors("spec.imageDigestMirrors[0]", "quay.io/b", 2), entry("spec.imageDigestMirrors[1]", "quay.io/c", "c.example/c")),
			},
			wantRegistries: []sysregistriesv2.Registry{registry("quay.io/a", digestMirror("mirror.example/m0"), digestMirror("mirror.example/m1"))},
			wantInEffect:   []string{"ImageDigestMirrorSet a"},
			wantProblems: []string{"2 entries (3 mirrors) left out, from ImageDigestMirrorSet b spec.imageDigestMirrors[0] on: " +
				"at most 3 mirrors are rendered"},
		},
		"entries FromUnstructured could not read are reported, at most ten by name": {
			sets: []Set{{Kind: TagKind, Name: "t", Problems: []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11"}}},
			wantProblems: []string{"ImageTagMirrorSet t: p0", "ImageTagMirrorSet t: p1", "ImageTagMirrorSet t: p2", "ImageTagMirrorSet t: p3",
				"ImageTagMirrorSet t: p4", "ImageTagMirrorSet t: p5", "ImageTagMirrorSet t: p6", "ImageTagMirrorSet t: p7",
				"ImageTagMirrorSet t: p8", "ImageTagMirrorSet t: p9", "2 more invalid entries"},
		},
		"an invalid entry is reported and the rest applies": {
			sets: []Set{
				idms("a",
					entry("spec.imageDigestMirrors[0]", "quay.io/Team", "mirror.example/team"),
					entry("spec.imageDigestMirrors[1]", "quay.io/ok", "mirror.example/ok"),
					entry("spec.imageDigestMirrors[2]", "quay.io/tagged", "mirror.example/x:1"),
					Entry{Field: "spec.imageDigestMirrors[3]", Source: "quay.io/p", Mirrors: []string{"mirror.example/p"}, Policy: "Sometimes"}),
				itms("b", entry("spec.imageTagMirrors[0]", "*.bad_domain", "mirror.example/w")),
			},
			wantRegistries: []sysregistriesv2.Registry{registry("quay.io/ok", digestMirror("mirror.example/ok"))},
			wantInEffect:   []string{"ImageDigestMirrorSet a"},
			wantProblems: []string{
				`ImageDigestMirrorSet a: spec.imageDigestMirrors[0].source "quay.io/Team": want a repository such as registry.example.com/team/app: repository name must be lowercase`,
				`ImageDigestMirrorSet a: spec.imageDigestMirrors[2].mirrors[0] "mirror.example/x:1": want a repository without tag or digest`,
				`ImageDigestMirrorSet a: spec.imageDigestMirrors[3].mirrorSourcePolicy "Sometimes": want AllowContactingSource or NeverContactSource`,
				`ImageTagMirrorSet b: spec.imageTagMirrors[0].source "*.bad_domain": a wildcard source is "*." and a domain: ` +
					`a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			limit := tc.max
			if limit == 0 {
				limit = DefaultMaxMirrors
			}
			got, err := Render(tc.sets, limit)
			if err != nil {
				t.Fatalf("Render() error = %v", err)
			}
			if diff := cmp.Diff(tc.wantInEffect, got.InEffect); diff != "" {
				t.Errorf("InEffect mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, got.Problems); diff != "" {
				t.Errorf("Problems mismatch (-want +got):\n%s", diff)
			}
			if tc.wantRegistries == nil {
				if got.Content != "" {
					t.Errorf("Content = %q, want none", got.Content)
				}
				return
			}
			// podman's own loader accepts it, and it says what the table says.
			if err := inspect.ValidateRegistriesConf([]byte(got.Content)); err != nil {
				t.Errorf("the drop-in does not load: %v\n%s", err, got.Content)
			}
			var parsed struct {
				Registries []sysregistriesv2.Registry `toml:"registry"`
			}
			if _, err := toml.Decode(got.Content, &parsed); err != nil {
				t.Fatalf("decoding the drop-in: %v", err)
			}
			if diff := cmp.Diff(tc.wantRegistries, parsed.Registries); diff != "" {
				t.Errorf("registries mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderIsDeterministic: the same objects in any order render the same bytes, which the
// controller's pod-template hash relies on.
func TestRenderIsDeterministic(t *testing.T) {
	a := idms("a", entry("spec.imageDigestMirrors[0]", "quay.io/team", "a.example/team"))
	b := itms("b", entry("spec.imageTagMirrors[0]", "quay.io/team", "b.example/team"))
	c := idms("c", entry("spec.imageDigestMirrors[0]", "docker.io/library", "c.example/library"))
	first, err := Render([]Set{a, b, c}, DefaultMaxMirrors)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Render([]Set{c, b, a}, DefaultMaxMirrors)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("Render() depends on the objects' order (-first +second):\n%s", diff)
	}
}

func TestFromUnstructured(t *testing.T) {
	tests := map[string]struct {
		obj     map[string]any
		wantSet Set
	}{
		"digest mirror set": {
			obj: map[string]any{"kind": DigestKind, "metadata": map[string]any{"name": "a"}, "spec": map[string]any{
				"imageDigestMirrors": []any{
					map[string]any{"source": "quay.io/team", "mirrors": []any{"m.example/team"}, "mirrorSourcePolicy": NeverContactSource},
				},
			}},
			wantSet: Set{Kind: DigestKind, Name: "a", Entries: []Entry{{Field: "spec.imageDigestMirrors[0]", Source: "quay.io/team",
				Mirrors: []string{"m.example/team"}, Policy: NeverContactSource}}},
		},
		"tag mirror set, a field of the wrong type": {
			obj: map[string]any{"kind": TagKind, "metadata": map[string]any{"name": "b"}, "spec": map[string]any{
				"imageTagMirrors": []any{
					map[string]any{"source": "quay.io/team", "mirrors": "m.example/team"},
					map[string]any{"source": "quay.io/ok"},
				},
			}},
			wantSet: Set{Kind: TagKind, Name: "b", Entries: []Entry{{Field: "spec.imageTagMirrors[1]", Source: "quay.io/ok"}},
				Problems: []string{"spec.imageTagMirrors[0]: .mirrors accessor error: m.example/team is of the type string, expected []interface{}"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantSet, FromUnstructured(&unstructured.Unstructured{Object: tc.obj})); diff != "" {
				t.Errorf("Set mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
