package runner

import (
	"testing"

	"github.com/archgate/archgate/fakeregistry"
)

func TestRegistryEconomy(t *testing.T) {
	list := fakeregistry.Image{Repository: "team/a", Digest: "sha256:a", Format: fakeregistry.FormatOCIIndex}
	single := fakeregistry.Image{Repository: "team/a", Digest: "sha256:b", Format: fakeregistry.FormatDockerManifest}
	other := fakeregistry.Image{Repository: "team/c", Digest: "sha256:c", Format: fakeregistry.FormatOCIManifest}
	type kinds = map[fakeregistry.RequestKind]uint64
	cases := []struct {
		name                         string
		images                       []fakeregistry.Image
		requests                     kinds
		auth                         fakeregistry.AuthMode
		wantMinimum, wantOverhead    int
		wantPerMinimum, wantPerImage float64
	}{
		{
			// containers/image: a ping per image; a list costs its manifest,
			// a single manifest its config too. Read once each: ×1.
			name: "anonymous, each image once", images: []fakeregistry.Image{list, single, single},
			requests:    kinds{fakeregistry.KindPing: 2, fakeregistry.KindManifestGet: 2, fakeregistry.KindBlobGet: 1},
			wantMinimum: 3, wantOverhead: 2, wantPerMinimum: 1, wantPerImage: 1,
		},
		{
			// Bearer: one token per repository is the minimum; the client
			// took one per image (3 images, 2 repositories).
			name: "bearer, a token per image", images: []fakeregistry.Image{list, single, other}, auth: fakeregistry.AuthBearer,
			requests:    kinds{fakeregistry.KindPing: 3, fakeregistry.KindToken: 3, fakeregistry.KindManifestGet: 3, fakeregistry.KindBlobGet: 2},
			wantMinimum: 5 + 2, wantOverhead: 3 + 1, wantPerMinimum: 1, wantPerImage: 4.0 / 3,
		},
		{
			// An image inspected twice shows in the content ratio, not in
			// the overhead.
			name: "an image read twice", images: []fakeregistry.Image{single},
			requests:    kinds{fakeregistry.KindPing: 2, fakeregistry.KindManifestGet: 2, fakeregistry.KindBlobGet: 2},
			wantMinimum: 2, wantOverhead: 2, wantPerMinimum: 2, wantPerImage: 2,
		},
		{name: "nothing gated", requests: kinds{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := registryEconomy(c.images, c.requests, c.auth)
			if g.MinimumRequests != c.wantMinimum || g.ProtocolOverhead.Total != uint64(c.wantOverhead) {
				t.Errorf("minimum %d, overhead %d; want %d and %d", g.MinimumRequests, g.ProtocolOverhead.Total, c.wantMinimum, c.wantOverhead)
			}
			if g.PerMinimum != c.wantPerMinimum || g.ProtocolOverhead.PerImage != c.wantPerImage {
				t.Errorf("per minimum %v, overhead per image %v; want %v and %v", g.PerMinimum, g.ProtocolOverhead.PerImage, c.wantPerMinimum, c.wantPerImage)
			}
			if g.ContentRequests+g.ProtocolOverhead.Total != g.Total {
				t.Errorf("content %d + overhead %d != total %d", g.ContentRequests, g.ProtocolOverhead.Total, g.Total)
			}
		})
	}
}
