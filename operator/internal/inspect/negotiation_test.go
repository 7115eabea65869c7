package inspect

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/fakeregistry"
)

// TestRegistryInspectorAgainstNegotiatingRegistries inspects list images in registries that
// negotiate by Accept as real ones do: the inspector must ask for indexes and manifest lists, or a
// distribution-like registry would hand it only the linux/amd64 manifest (and one that cannot serve
// indexes to old clients a 404).
func TestRegistryInspectorAgainstNegotiatingRegistries(t *testing.T) {
	refs := map[string][]string{
		"library/multi:latest": {"amd64", "arm64", "ppc64le", "s390x"},
		"team/dockerlist:v2":   {"amd64", "arm"},
	}
	for _, mode := range fakeregistry.Negotiations() {
		t.Run(string(mode), func(t *testing.T) {
			catalog, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{
				Negotiation: mode,
				Repositories: []fakeregistry.RepositorySpec{
					{Name: "library/multi", Images: []fakeregistry.ImageSpec{{Tags: []string{"latest"}, Format: fakeregistry.FormatOCIIndex,
						Platforms: []string{"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x"}, Attestations: true}}},
					{Name: "team/dockerlist", Images: []fakeregistry.ImageSpec{{Tags: []string{"v2"}, Format: fakeregistry.FormatDockerManifestList,
						Platforms: []string{"linux/amd64", "linux/arm/v7", "windows/amd64"}}}},
				},
			})
			if err != nil {
				t.Fatalf("NewCatalog: %v", err)
			}
			reg, err := fakeregistry.Start(t.Context(), fakeregistry.Options{Catalog: catalog})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			t.Cleanup(func() { _ = reg.Close() })
			opts := newPodmanConfig(t, "").options()
			opts.InsecureSkipTLSVerify = true
			inspector := mustInspector(t, opts)
			for ref, want := range refs {
				got, err := inspector.Architectures(context.Background(), reg.Host()+"/"+ref, nil)
				if err != nil {
					t.Fatalf("Architectures(%s) error = %v", ref, err)
				}
				if diff := cmp.Diff(want, got.Architectures); diff != "" {
					t.Errorf("Architectures(%s) mismatch (-want +got):\n%s", ref, diff)
				}
			}
		})
	}
}
