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

// Package mirrorsets turns OpenShift's ImageDigestMirrorSet and ImageTagMirrorSet objects
// (config.openshift.io/v1) into a registries.conf drop-in, so that the pod placement controller
// inspects images through the mirrors a node's CRI-O pulls them from. It is pure: the operator
// reads the objects and delivers the drop-in. The deprecated ImageContentSourcePolicy
// (operator.openshift.io/v1alpha1) is not read.
package mirrorsets

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The mirror set kinds and their API group and version.
const (
	Group      = "config.openshift.io"
	Version    = "v1"
	DigestKind = "ImageDigestMirrorSet"
	TagKind    = "ImageTagMirrorSet"
)

// Policies of an entry's mirrorSourcePolicy; empty means AllowContactingSource.
const (
	AllowContactingSource = "AllowContactingSource"
	NeverContactSource    = "NeverContactSource"
)

// Kinds returns the two kinds' GroupVersionKinds, digest mirrors first.
func Kinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		{Group: Group, Version: Version, Kind: DigestKind},
		{Group: Group, Version: Version, Kind: TagKind},
	}
}

// Set is one mirror set object: its kind (DigestKind or TagKind), name and entries.
type Set struct {
	Kind    string
	Name    string
	Entries []Entry
	// Problems name the entries FromUnstructured could not read; Render reports them.
	Problems []string
}

// Entry is one element of spec.imageDigestMirrors or spec.imageTagMirrors.
type Entry struct {
	// Field is the entry's path in its object, for messages: "spec.imageDigestMirrors[2]".
	Field string
	// Source is the repository (or host, or "*.domain") whose images the mirrors serve.
	Source string
	// Mirrors are tried in order before the source.
	Mirrors []string
	// Policy is the mirrorSourcePolicy as written; Render checks it.
	Policy string
}

// specField is the spec field that holds a kind's entries.
func specField(kind string) string {
	if kind == TagKind {
		return "imageTagMirrors"
	}
	return "imageDigestMirrors"
}

// FromUnstructured reads the entries of a mirror set object. The objects are read
// unstructured because the only github.com/openshift/api the module proxy serves is a
// pre-modules release without config.openshift.io/v1's mirror sets; four fields do not
// justify a hand-copied typed API. A field of the wrong type is reported (object, field,
// value) in Problems and its entry left out; Render checks the values.
func FromUnstructured(u *unstructured.Unstructured) Set {
	set := Set{Kind: u.GetKind(), Name: u.GetName()}
	field := specField(set.Kind)
	items, _, err := unstructured.NestedSlice(u.Object, "spec", field)
	if err != nil {
		set.Problems = []string{fmt.Sprintf("spec.%s: %v", field, err)}
		return set
	}
	for i, item := range items {
		e := Entry{Field: fmt.Sprintf("spec.%s[%d]", field, i)}
		m, ok := item.(map[string]any)
		if !ok {
			set.Problems = append(set.Problems, fmt.Sprintf("%s: want an object, got %v", e.Field, item))
			continue
		}
		var errs []error
		var err error
		e.Source, _, err = unstructured.NestedString(m, "source")
		errs = append(errs, err)
		e.Mirrors, _, err = unstructured.NestedStringSlice(m, "mirrors")
		errs = append(errs, err)
		e.Policy, _, err = unstructured.NestedString(m, "mirrorSourcePolicy")
		errs = append(errs, err)
		if bad := errors.Join(errs...); bad != nil {
			set.Problems = append(set.Problems, fmt.Sprintf("%s: %v", e.Field, bad))
			continue
		}
		set.Entries = append(set.Entries, e)
	}
	return set
}
