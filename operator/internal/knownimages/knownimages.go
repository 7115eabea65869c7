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

// Package knownimages carries the architectures of images the pod placement controller has
// inspected anonymously to the webhook, so that the webhook can place a pod at admission when it
// knows every one of its images: the pod then never carries the scheduling gate and costs the
// apiserver no gate-removal write (docs/performance.md).
//
// The controller's leader publishes, in one ConfigMap of the operator's namespace (Publisher),
// the cached results a pod without imagePullSecrets would be served: those read anonymously, or
// with the global pull secret for the registries it covers (inspect.CachingInspector.KnownImages).
// The webhook replicas watch it (Store) and use it only for pods without imagePullSecrets, so a
// result read with a pod's own credentials never serves another pod — the same rule as the
// controller's cache. Entries keep the controller's expiry, so a re-pushed tag is served no longer
// by the webhook than by the controller. The ConfigMap names images and their architectures, as
// the pods' own annotations do; it holds no credential.
package knownimages

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/archgate/archgate/operator/internal/inspect"
)

// Well-known names of the published ConfigMap.
const (
	// DefaultConfigMapName is the ConfigMap the operator renders into both components' arguments.
	DefaultConfigMapName = "archgate-known-images"
	// DataKey is the ConfigMap key that holds the JSON document.
	DataKey = "images.json"
	// MaxDataBytes keeps the document well under the 1 MiB object limit of etcd; the least
	// recently used entries are left out past it (the webhook then gates their pods, as before).
	MaxDataBytes = 768 << 10
)

// document is the JSON form of the published entries.
type document struct {
	// Entries are the public results, sorted by reference.
	Entries []inspect.KnownImage `json:"entries"`
}

// Encode returns the document for entries (least recently used first), dropping the oldest
// entries until it fits in maxBytes, and the number of entries kept. The document lists them
// by reference, so equal content encodes to equal bytes.
func Encode(entries []inspect.KnownImage, maxBytes int) ([]byte, int, error) {
	return fit(entries, maxBytes, func(kept []inspect.KnownImage) ([]byte, error) {
		// Sorted by reference, the document's bytes change only when its content does: the
		// cache's recency order moves with every lookup, and a rewrite in that order would be
		// sent to every webhook replica for nothing.
		sorted := slices.SortedFunc(slices.Values(kept), func(a, b inspect.KnownImage) int { return strings.Compare(a.Ref, b.Ref) })
		return json.Marshal(document{Entries: sorted})
	})
}

// EncodeParameters returns the image entries of the params for entries (least recently used
// first, see ImageParameters), dropping the oldest entries until its JSON fits in
// maxBytes, and the number of entries kept.
func EncodeParameters(entries []inspect.KnownImage, maxBytes int) (map[string]string, int, error) {
	var images map[string]string
	_, kept, err := fit(entries, maxBytes, func(kept []inspect.KnownImage) ([]byte, error) {
		images = ImageParameters(kept)
		return json.Marshal(images)
	})
	return images, kept, err
}

// fit encodes the newest entries that fit in maxBytes (all of them, if they do), and returns
// the encoding and the number of entries kept.
func fit(entries []inspect.KnownImage, maxBytes int, encode func([]inspect.KnownImage) ([]byte, error)) ([]byte, int, error) {
	from := 0
	for {
		b, err := encode(entries[from:])
		if err != nil {
			return nil, 0, fmt.Errorf("encoding %d known images: %w", len(entries)-from, err)
		}
		if len(b) <= maxBytes || from == len(entries) {
			return b, len(entries) - from, nil
		}
		// Drop the share of entries by which the encoding is too large, at least one.
		over := float64(len(b)-maxBytes) / float64(len(b))
		from = min(len(entries), from+max(1, int(over*float64(len(entries)-from)+0.5)))
	}
}

// Index answers which architectures a known image supports. The zero value knows nothing; an
// Index is immutable once built.
type Index struct {
	entries map[string]inspect.KnownImage
}

// Parse builds an Index from a published document. An error names the key and the problem.
func Parse(data string) (*Index, error) {
	var doc document
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		return nil, fmt.Errorf("parsing key %s: %w", DataKey, err)
	}
	ix := &Index{entries: make(map[string]inspect.KnownImage, len(doc.Entries))}
	for i, e := range doc.Entries {
		ref, _, err := inspect.CanonicalReference(e.Ref)
		if err != nil || ref != e.Ref {
			return nil, fmt.Errorf("parsing key %s: entries[%d].ref %q is not a canonical image reference", DataKey, i, e.Ref)
		}
		ix.entries[ref] = e
	}
	return ix, nil
}

// Len returns the number of entries, expired ones included.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	return len(ix.entries)
}

// Lookup returns the result for image (any reference form) when it is known and not expired at
// now. The Result's Identity is credentials.Anonymous.
func (ix *Index) Lookup(image string, now time.Time) (inspect.Result, bool) {
	if ix == nil {
		return inspect.Result{}, false
	}
	ref, _, err := inspect.CanonicalReference(image)
	if err != nil {
		return inspect.Result{}, false
	}
	e, ok := ix.entries[ref]
	if !ok || (e.Expires != nil && !now.Before(*e.Expires)) {
		return inspect.Result{}, false
	}
	return e.Result(), true
}

// The admission policy's params are a ConfigMap (DefaultParametersConfigMapName): a ConfigMap
// is a built-in kind, which the apiserver hands a policy as a typed object read lazily, field by
// field, while a custom resource's params are converted whole, through JSON, for every
// evaluation (measured: about 3 ms of apiserver CPU per pod with 700 entries, the cost of the
// policy's whole evaluation many times over). ConfigMap keys cannot hold the '/', ':' and '@' of
// image references, so keys are escaped (ParameterKey), and the policy escapes the pods' images
// the same way in CEL.
const (
	// DefaultParametersConfigMapName is the ConfigMap of the operator's namespace that holds the
	// admission policy's params.
	DefaultParametersConfigMapName = "archgate-placement-parameters"
	// AnyArchitecture is the value of an image that runs on any architecture.
	AnyArchitecture = "*"
	// namespaceKeyPrefix starts the key of a namespace with PodPlacementConfigs: no escaped
	// image reference starts with it ('_' is always followed by '_', 's', 'c' or 'a').
	namespaceKeyPrefix = "_n"
)

// keyEscaper escapes an image reference into a ConfigMap key; '_' first, so that the result
// reads back one way only.
var keyEscaper = strings.NewReplacer("_", "__", "/", "_s", ":", "_c", "@", "_a")

// ParameterKey is the params key of an image reference, as the admission policy computes it:
// '_' doubled, '/', ':' and '@' written "_s", "_c" and "_a". A reference whose key would not be
// a valid ConfigMap key is never found, and its pods are gated.
func ParameterKey(image string) string { return keyEscaper.Replace(image) }

// ParameterKeyExpression is the CEL expression that computes ParameterKey of the string
// expression image.
func ParameterKeyExpression(image string) string {
	return image + `.replace('_', '__').replace('/', '_s').replace(':', '_c').replace('@', '_a')`
}

// NamespaceKey is the params key that marks namespace as having PodPlacementConfigs.
func NamespaceKey(namespace string) string { return namespaceKeyPrefix + namespace }

// ImageParameters returns the params entries of entries: each reference, in every form a pod may
// write it (inspect.WrittenForms), keyed by ParameterKey, mapped to its architectures joined by
// commas, or AnyArchitecture. An entry without architectures is left out (its pods are gated
// and the controller reports them), and so is a form whose key is not a valid ConfigMap key.
func ImageParameters(entries []inspect.KnownImage) map[string]string {
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		value := AnyArchitecture
		if !e.AnyArchitecture {
			if len(e.Architectures) == 0 {
				continue
			}
			value = strings.Join(slices.Sorted(slices.Values(e.Architectures)), ",")
		}
		for _, form := range inspect.WrittenForms(e.Ref) {
			if key := ParameterKey(form); len(validation.IsConfigMapKey(key)) == 0 {
				out[key] = value
			}
		}
	}
	return out
}
