package fakeregistry

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/types"

	digest "github.com/opencontainers/go-digest"
)

// testCatalog loads the sample catalog.
func testCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := LoadCatalog("testdata/catalog.yaml")
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	return c
}

// startRegistry starts a registry closed at the end of the test.
func startRegistry(t testing.TB, opts Options) *Registry {
	t.Helper()
	if opts.Catalog == nil {
		opts.Catalog = testCatalog(t)
	}
	reg, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return reg
}

// podmanSystemContext returns a hermetic containers/image SystemContext for reg: no host config files,
// the given credentials, and either the registry's CA (certs.d layout) or, for plain HTTP, the insecure
// flag that lets the docker transport fall back from https to http.
func podmanSystemContext(t testing.TB, reg *Registry, user, password string) *types.SystemContext {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "registries.conf")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatalf("writing registries.conf: %v", err)
	}
	sys := &types.SystemContext{
		SystemRegistriesConfPath:    conf,
		SystemRegistriesConfDirPath: filepath.Join(dir, "registries.conf.d"),
		RegistriesDirPath:           filepath.Join(dir, "registries.d"),
		AuthFilePath:                filepath.Join(dir, "auth.json"),
		DockerAuthConfig:            &types.DockerAuthConfig{Username: user, Password: password},
		DockerRegistryUserAgent:     "fakeregistry-test",
		BigFilesTemporaryDir:        dir,
	}
	if reg.TLS() {
		root := filepath.Join(dir, "certs.d")
		if _, err := reg.WriteCertsDir(root); err != nil {
			t.Fatalf("WriteCertsDir: %v", err)
		}
		sys.DockerPerHostCertDirPath = root
	} else {
		sys.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
	}
	return sys
}

// inspection is what containers/image reports about an image.
type inspection struct {
	// MIMEType is the top-level manifest type.
	MIMEType string
	// Entries are the list's instances as os/arch[/variant]; attestations are marked; nil for single images.
	Entries []string
	// Configs are os/arch[/variant] from the config of every image instance (or of the single image).
	Configs []string
	// Bundle is true when every config carries the operator-bundle label.
	Bundle bool
}

// attestationEntry marks attestation entries in inspection.Entries.
const attestationEntry = "unknown/unknown attestation"

// inspectImage inspects ref (host:port/repo:tag) the way the operator does: docker transport, manifest
// list parsing, then each image instance's config.
func inspectImage(ctx context.Context, sys *types.SystemContext, ref string) (inspection, error) {
	r, err := docker.ParseReference("//" + ref)
	if err != nil {
		return inspection{}, err
	}
	src, err := r.NewImageSource(ctx, sys)
	if err != nil {
		return inspection{}, err
	}
	defer src.Close()
	raw, mime, err := src.GetManifest(ctx, nil)
	if err != nil {
		return inspection{}, err
	}
	out := inspection{MIMEType: mime, Bundle: true}
	var instances []*digest.Digest
	if manifest.MIMETypeIsMultiImage(mime) {
		list, err := manifest.ListFromBlob(raw, mime)
		if err != nil {
			return inspection{}, err
		}
		for _, d := range list.Instances() {
			inst, err := list.Instance(d)
			if err != nil {
				return inspection{}, err
			}
			if inst.ReadOnly.Annotations[AttestationReferenceTypeAnnotation] == "attestation-manifest" {
				out.Entries = append(out.Entries, attestationEntry)
				continue
			}
			p := inst.ReadOnly.Platform
			out.Entries = append(out.Entries, Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}.String())
			instances = append(instances, &d)
		}
	} else {
		instances = append(instances, nil)
	}
	for _, d := range instances {
		img, err := image.FromUnparsedImage(ctx, sys, image.UnparsedInstance(src, d))
		if err != nil {
			return inspection{}, err
		}
		info, err := img.Inspect(ctx)
		if err != nil {
			return inspection{}, err
		}
		out.Configs = append(out.Configs, Platform{OS: info.Os, Architecture: info.Architecture, Variant: info.Variant}.String())
		if info.Labels[BundleMediaTypeLabel] == "" {
			out.Bundle = false
		}
	}
	return out, nil
}

// expectedInspection derives what inspectImage should see for a catalog image.
func expectedInspection(im Image) inspection {
	want := inspection{MIMEType: im.MediaType, Bundle: im.Arches.NoBinaries}
	for _, p := range im.Platforms {
		want.Configs = append(want.Configs, p.String())
		if im.Format.IsList() {
			want.Entries = append(want.Entries, p.String())
		}
	}
	if im.Attestations {
		for range im.Platforms {
			want.Entries = append(want.Entries, attestationEntry)
		}
	}
	return want
}

// httpClient returns a plain Go client trusting reg's CA, with a per-request deadline.
func httpClient(reg *Registry) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: reg.CertPool(), MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// waitFor polls cond every few milliseconds until it holds or a bounded number of tries passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
