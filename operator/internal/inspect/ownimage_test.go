//go:build image

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

package inspect

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/internal/ownimage"
)

// TestInspectOwnImage inspects the image `make image` built (the OCI layout named by
// ARCHGATE_IMAGE_LAYOUT, tag ARCHGATE_IMAGE_TAG or latest) served over TLS by the fake registry:
// archgate must find all four architectures in its own image and read the index the layout holds.
// Run it with `make test-image`, which builds the layout first.
func TestInspectOwnImage(t *testing.T) {
	dir := os.Getenv("ARCHGATE_IMAGE_LAYOUT")
	if dir == "" {
		t.Fatal("ARCHGATE_IMAGE_LAYOUT is not set: run this test through `make test-image`")
	}
	tag := os.Getenv("ARCHGATE_IMAGE_TAG")
	if tag == "" {
		tag = "latest"
	}
	built, err := ownimage.ReadLayout(dir, tag)
	if err != nil {
		t.Fatal(err)
	}
	wantDigest, err := built.Digest()
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{
		Layouts: []fakeregistry.LayoutSpec{{Repository: "archgate/archgate", Path: dir}},
	})
	if err != nil {
		t.Fatalf("NewCatalog(layout %s): %v", dir, err)
	}
	reg, err := fakeregistry.Start(t.Context(), fakeregistry.Options{Catalog: catalog, TLS: true})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	cfg := newPodmanConfig(t, "")
	if _, err := reg.WriteCertsDir(cfg.certsDir()); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host() + "/archgate/archgate:" + tag
	got, err := mustInspector(t, cfg.options()).Architectures(t.Context(), ref, nil)
	if err != nil {
		t.Fatalf("Architectures(%s): %v", ref, err)
	}
	if diff := cmp.Diff([]string{"amd64", "arm64", "ppc64le", "s390x"}, got.Architectures); diff != "" {
		t.Errorf("architectures of %s (-want +got):\n%s", ref, diff)
	}
	if got.Digest != wantDigest.String() {
		t.Errorf("inspected digest %s, want the layout's index %s", got.Digest, wantDigest)
	}
	t.Logf("%s: %s %v", ref, got.Digest, got.Architectures)
}
