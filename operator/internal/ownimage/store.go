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

package ownimage

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// RefNameAnnotation names a manifest's tag in an OCI layout's index.json.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// MozillaRoots returns the Mozilla (NSS) root certificates of golang.org/x/crypto/x509roots/fallback
// as a PEM bundle. A Go module rather than the build machine's ca-certificates package: its
// version is pinned in go.mod, so the bundle, and the image digest, do not depend on which
// machine builds the image. Roots NSS constrains with a distrust-after date are left out: PEM
// cannot carry that constraint, and trusting them without it would widen trust.
func MozillaRoots() []byte {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}) // writes to memory cannot fail
	}
	return buf.Bytes()
}

// WriteLayout replaces dir with an OCI image layout holding idx, tagged tag. The directory is
// removed first so that no blob of an earlier build remains.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image: removing the old layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: creating the layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag})); err != nil {
		return fmt.Errorf("image: writing the index into %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the index tagged tag in the OCI layout at dir.
func ReadLayout(dir, tag string) (v1.ImageIndex, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image: reading the layout %s: %w", dir, err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image: reading %s/index.json: %w", dir, err)
	}
	for _, d := range m.Manifests {
		if d.Annotations[RefNameAnnotation] == tag && d.MediaType.IsIndex() {
			return root.ImageIndex(d.Digest)
		}
	}
	return nil, fmt.Errorf("image: the layout %s has no index tagged %q (annotation %s)", dir, tag, RefNameAnnotation)
}

// Push writes idx and everything it references to ref (a tag or digest reference in any
// registry), with credentials from the Docker/podman config as docker push would use.
func Push(ctx context.Context, idx v1.ImageIndex, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: IMG %q is not an image reference: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("image: pushing to %s: %w", ref, err)
	}
	return idx.Digest()
}
