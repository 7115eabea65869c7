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

// Package ownimage assembles archgate's multi-architecture OCI image index from cross-compiled
// binaries without a container engine, writes it as an OCI image layout and pushes it.
//
// go-containerregistry's mutate and layout packages do the assembly (they are already
// dependencies of the operator and the fake registry) rather than ko: ko builds the binary
// itself (the Makefile already cross-compiles with the workspace's tags) and starts from a base
// image pulled from a registry, which would make the image depend on a moving remote tag. Here
// every input is local and pinned: the binaries, the CA bundle from a Go module, and the
// creation time, so the same commit gives the same digests.
package ownimage

import (
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identity inside the image.
const (
	// BinaryPath is where the archgate binary lives by default; it is the entrypoint.
	BinaryPath = "/archgate"
	// CABundlePath is where Go's crypto/x509 (and so containers/image) looks for system roots
	// on Linux first.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// NonRootUser is the numeric user and group the image runs as: numeric so the kubelet can
	// check runAsNonRoot without an /etc/passwd (65532 is distroless's "nonroot").
	NonRootUser = "65532:65532"
)

// Binary is one platform's archgate binary.
type Binary struct {
	// Platform is the OS, architecture and optional variant the binary runs on.
	Platform v1.Platform
	// Content is the binary itself.
	Content []byte
}

// Options describe the index to build.
type Options struct {
	// Binaries are the per-platform binaries; one image per entry, in this order.
	Binaries []Binary
	// CABundle is the PEM bundle written to CABundlePath in every image.
	CABundle []byte
	// Created is the creation time of configs and history and every file's mtime: the commit
	// time, so rebuilding a commit gives the same digests.
	Created time.Time
	// BinaryPath is where the binary goes and the entrypoint; BinaryPath when empty (the
	// real-node cluster packages its pod sandbox binary as /pause with the same code).
	BinaryPath string
	// Annotations go on the index (org.opencontainers.image.* keys such as revision, source).
	Annotations map[string]string
}

// BuildIndex assembles the OCI image index: per platform an image of two layers, the CA bundle
// (the same blob for every platform) and the binary.
func BuildIndex(opts Options) (v1.ImageIndex, error) {
	if len(opts.Binaries) == 0 {
		return nil, fmt.Errorf("image: Options.Binaries is empty: at least one platform's binary is needed")
	}
	if len(opts.CABundle) == 0 {
		return nil, fmt.Errorf("image: Options.CABundle is empty: the image needs CA certificates to reach registries over TLS")
	}
	// One instant whatever the caller's zone: the config's JSON carries the zone offset.
	created := opts.Created.UTC().Truncate(time.Second)
	binPath := opts.BinaryPath
	if binPath == "" {
		binPath = BinaryPath
	}
	certs, err := layerOf([]file{{path: CABundlePath, mode: 0o644, content: opts.CABundle}}, created)
	if err != nil {
		return nil, fmt.Errorf("image: CA bundle layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for i, b := range opts.Binaries {
		p := b.Platform.String()
		if b.Platform.OS == "" || b.Platform.Architecture == "" || seen[p] {
			return nil, fmt.Errorf("image: Options.Binaries[%d].Platform %q: needs an OS and an architecture and must be unique", i, p)
		}
		seen[p] = true
		img, err := platformImage(b, binPath, certs, created)
		if err != nil {
			return nil, fmt.Errorf("image: Options.Binaries[%d] (%s): %w", i, p, err)
		}
		platform := b.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	if len(opts.Annotations) == 0 {
		return idx, nil
	}
	annotated, ok := mutate.Annotations(idx, maps.Clone(opts.Annotations)).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("image: annotating the index did not return an index")
	}
	return annotated, nil
}

// platformImage is one platform's image: the shared CA layer, the binary layer and a config
// running the binary at binPath as NonRootUser.
func platformImage(b Binary, binPath string, certs v1.Layer, created time.Time) (v1.Image, error) {
	bin, err := layerOf([]file{{path: binPath, mode: 0o755, content: b.Content}}, created)
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: certs, History: history(created, "CA certificates "+CABundlePath)},
		mutate.Addendum{Layer: bin, History: history(created, "binary "+binPath)},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant, cfg.OSVersion = b.Platform.OS, b.Platform.Architecture, b.Platform.Variant, b.Platform.OSVersion
	cfg.Created = v1.Time{Time: created}
	cfg.Config.User = NonRootUser
	cfg.Config.Entrypoint = []string{binPath}
	cfg.Config.Env = []string{"PATH=/", "SSL_CERT_FILE=" + CABundlePath}
	cfg.Config.Labels = nil
	return mutate.ConfigFile(img, cfg)
}

func history(created time.Time, what string) v1.History {
	return v1.History{Created: v1.Time{Time: created}, CreatedBy: "archgate image build: " + what}
}

// Platforms returns the platforms of an index's manifests in index order, as "os/arch[/variant]".
func Platforms(idx v1.ImageIndex) ([]string, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range m.Manifests {
		if d.Platform != nil {
			out = append(out, d.Platform.String())
		}
	}
	return slices.Clip(out), nil
}
