package knownimages

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/inspect"
)

type fixedSource []inspect.KnownImage

func (s fixedSource) KnownImages(func(string) []credentials.Identity) []inspect.KnownImage {
	return append([]inspect.KnownImage(nil), s...)
}
func (s fixedSource) Changes() uint64 { return 7 }

// TestWithoutDockerHub: where registries.conf resolves short names elsewhere, docker.io's
// images are not published, so the webhook and the admission policy cannot read "nginx" as
// docker.io's; the others are, and Changes passes through.
func TestWithoutDockerHub(t *testing.T) {
	src := fixedSource{
		{Ref: "docker.io/library/nginx:latest", Architectures: []string{"amd64"}},
		{Ref: "quay.io/team/app:1", Architectures: []string{"arm64"}},
		{Ref: "registry.corp.example:5000/docker.io/app:1", Architectures: []string{"s390x"}},
	}
	got := WithoutDockerHub(src)
	want := []inspect.KnownImage{src[1], src[2]}
	if diff := cmp.Diff(want, got.KnownImages(nil)); diff != "" {
		t.Errorf("KnownImages mismatch (-want +got):\n%s", diff)
	}
	if got.Changes() != 7 {
		t.Errorf("Changes() = %d, want the source's 7", got.Changes())
	}
	if len(src) != 3 {
		t.Error("the source's slice was changed")
	}
}
