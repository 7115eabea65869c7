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
	"archive/tar"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/archgate/archgate/fakeregistry"
)

var created = time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)

func fourPlatforms() []Binary {
	var out []Binary
	for _, arch := range []string{"amd64", "arm64", "ppc64le", "s390x"} {
		out = append(out, Binary{Platform: v1.Platform{OS: "linux", Architecture: arch}, Content: []byte("binary for " + arch)})
	}
	return out
}

func testOptions() Options {
	return Options{Binaries: fourPlatforms(), CABundle: MozillaRoots(), Created: created,
		Annotations: map[string]string{"org.opencontainers.image.revision": "abc"}}
}

func mustDigest(t *testing.T, opts Options) v1.Hash {
	t.Helper()
	idx, err := BuildIndex(opts)
	if err != nil {
		t.Fatalf("BuildIndex: %v", err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

func TestBuildIndexIsReproducible(t *testing.T) {
	base := mustDigest(t, testOptions())
	tests := []struct {
		name   string
		change func(*Options)
		same   bool
	}{
		{name: "same inputs", change: func(*Options) {}, same: true},
		{name: "same instant in another zone", change: func(o *Options) { o.Created = created.In(time.FixedZone("x", 3600)) }, same: true},
		{name: "another creation time", change: func(o *Options) { o.Created = created.Add(time.Second) }},
		{name: "another binary", change: func(o *Options) { o.Binaries[1].Content = []byte("changed") }},
		{name: "another annotation", change: func(o *Options) { o.Annotations["org.opencontainers.image.revision"] = "def" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			tt.change(&opts)
			if got := mustDigest(t, opts); (got == base) != tt.same {
				t.Errorf("digest %s vs base %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
}

func TestBuildIndexContent(t *testing.T) {
	idx, err := BuildIndex(testOptions())
	if err != nil {
		t.Fatalf("BuildIndex: %v", err)
	}
	platforms, err := Platforms(idx)
	if err != nil {
		t.Fatalf("Platforms: %v", err)
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	m, _ := idx.IndexManifest()
	var caLayers []v1.Hash
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("Image(%s): %v", d.Digest, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatalf("ConfigFile: %v", err)
		}
		if cfg.Architecture != d.Platform.Architecture || cfg.Config.User != NonRootUser ||
			!cmp.Equal(cfg.Config.Entrypoint, []string{BinaryPath}) || !cfg.Created.Equal(created) {
			t.Errorf("%s config: arch %q user %q entrypoint %q created %v", d.Platform, cfg.Architecture, cfg.Config.User, cfg.Config.Entrypoint, cfg.Created)
		}
		layers, _ := img.Layers()
		caDigest, _ := layers[0].Digest()
		caLayers = append(caLayers, caDigest)
		checkFiles(t, layers[1], map[string]string{"archgate": "binary for " + d.Platform.Architecture})
	}
	for _, d := range caLayers[1:] {
		if d != caLayers[0] {
			t.Errorf("CA layers differ between platforms: %v", caLayers)
		}
	}
}

// checkFiles reads a layer and checks its regular files, owners, mtimes and entry order.
func checkFiles(t *testing.T, l v1.Layer, want map[string]string) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatalf("Uncompressed: %v", err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	got := map[string]string{}
	prev := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		if h.Name < prev || !h.ModTime.Equal(created) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("entry %q after %q: mtime %v uid %d gid %d", h.Name, prev, h.ModTime, h.Uid, h.Gid)
		}
		prev = h.Name
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			got[h.Name] = string(b)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer files (-want +got):\n%s", diff)
	}
}

func TestBuildIndexRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name, wantErr string
		change        func(*Options)
	}{
		{name: "no binaries", wantErr: "Options.Binaries is empty", change: func(o *Options) { o.Binaries = nil }},
		{name: "no CA bundle", wantErr: "Options.CABundle is empty", change: func(o *Options) { o.CABundle = nil }},
		{name: "duplicate platform", wantErr: `Options.Binaries[2].Platform "linux/amd64"`, change: func(o *Options) { o.Binaries[2].Platform.Architecture = "amd64" }},
		{name: "no architecture", wantErr: `Options.Binaries[0].Platform "linux"`, change: func(o *Options) { o.Binaries[0].Platform.Architecture = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			tt.change(&opts)
			if _, err := BuildIndex(opts); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("BuildIndex error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLayoutRoundTrip(t *testing.T) {
	want := mustDigest(t, testOptions())
	idx, _ := BuildIndex(testOptions())
	dir := filepath.Join(t.TempDir(), "layout")
	for range 2 { // the second write replaces the first
		if err := WriteLayout(dir, idx, "v1"); err != nil {
			t.Fatalf("WriteLayout: %v", err)
		}
	}
	read, err := ReadLayout(dir, "v1")
	if err != nil {
		t.Fatalf("ReadLayout: %v", err)
	}
	if got, _ := read.Digest(); got != want {
		t.Errorf("digest read back %s, want %s", got, want)
	}
	if _, err := ReadLayout(dir, "v2"); err == nil || !strings.Contains(err.Error(), `no index tagged "v2"`) {
		t.Errorf("ReadLayout(v2) error = %v, want one naming the missing tag", err)
	}
}

func TestMozillaRootsParse(t *testing.T) {
	rest := MozillaRoots()
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Fatalf("certificate %d: %v", n, err)
		}
		n++
	}
	if n < 100 || len(strings.TrimSpace(string(rest))) != 0 {
		t.Errorf("parsed %d certificates with %d bytes left over, want 100+ and nothing left", n, len(rest))
	}
}

// TestPushToWritableRegistry pushes the index into the fake registry (which accepts pushes when
// Writable) and reads it back by tag: same digest, all platforms.
func TestPushToWritableRegistry(t *testing.T) {
	reg, err := fakeregistry.Start(t.Context(), fakeregistry.Options{Writable: true})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	idx, _ := BuildIndex(testOptions())
	ref := reg.Host() + "/archgate/archgate:v1"
	pushed, err := Push(t.Context(), idx, ref)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	r, _ := name.ParseReference(ref)
	got, err := remote.Index(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("reading %s back: %v", ref, err)
	}
	if d, _ := got.Digest(); d != pushed {
		t.Errorf("digest read back %s, pushed %s", d, pushed)
	}
	if platforms, _ := Platforms(got); len(platforms) != 4 {
		t.Errorf("platforms read back %v, want four", platforms)
	}
	if _, err := Push(t.Context(), idx, "not a reference"); err == nil || !strings.Contains(err.Error(), `IMG "not a reference"`) {
		t.Errorf("Push(bad reference) error = %v, want one naming IMG", err)
	}
}
