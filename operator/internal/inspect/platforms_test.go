package inspect

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	imgspecv1 "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/manifest"
)

func TestNormalizeArchitecture(t *testing.T) {
	tests := map[string]struct {
		arch     string
		wantArch string
	}{
		"amd64":              {arch: "amd64", wantArch: "amd64"},
		"x86_64":             {arch: "x86_64", wantArch: "amd64"},
		"amd64 with variant": {arch: "amd64/v3", wantArch: "amd64"},
		"aarch64":            {arch: "aarch64", wantArch: "arm64"},
		"arm64/v8":           {arch: "arm64/v8", wantArch: "arm64"},
		"upper case":         {arch: "ARM64", wantArch: "arm64"},
		"arm/v7":             {arch: "arm/v7", wantArch: "arm"},
		"armhf":              {arch: "armhf", wantArch: "arm"},
		"armv7l":             {arch: "armv7l", wantArch: "arm"},
		"i686":               {arch: "i686", wantArch: "386"},
		"ppc64el":            {arch: "ppc64el", wantArch: "ppc64le"},
		"ppc64le":            {arch: "ppc64le", wantArch: "ppc64le"},
		"s390x":              {arch: "s390x", wantArch: "s390x"},
		"riscv64 passes":     {arch: "riscv64", wantArch: "riscv64"},
		"spaces":             {arch: "  s390x ", wantArch: "s390x"},
		"unknown":            {arch: "unknown", wantArch: ""},
		"empty":              {arch: "", wantArch: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := NormalizeArchitecture(tc.arch); got != tc.wantArch {
				t.Errorf("NormalizeArchitecture(%q) = %q, want %q", tc.arch, got, tc.wantArch)
			}
		})
	}
}

func TestLinuxArchitectures(t *testing.T) {
	attestation := map[string]string{
		"vnd.docker.reference.type":   "attestation-manifest",
		"vnd.docker.reference.digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
	}
	tests := map[string]struct {
		platforms []Platform
		want      []string
	}{
		"buildx index with attestations": {
			platforms: []Platform{
				{OS: "linux", Architecture: "amd64"},
				{OS: "linux", Architecture: "arm64", Variant: "v8"},
				{OS: "unknown", Architecture: "unknown", Annotations: attestation},
				{OS: "unknown", Architecture: "unknown", Annotations: attestation},
			},
			want: []string{"amd64", "arm64"},
		},
		"attestation annotation with a real-looking platform": {
			platforms: []Platform{
				{OS: "linux", Architecture: "s390x", Annotations: attestation},
				{OS: "linux", Architecture: "ppc64le"},
			},
			want: []string{"ppc64le"},
		},
		"windows entries skipped": {
			platforms: []Platform{
				{OS: "windows", Architecture: "amd64"},
				{OS: "linux", Architecture: "arm", Variant: "v7"},
			},
			want: []string{"arm"},
		},
		"variants collapse": {
			platforms: []Platform{
				{OS: "linux", Architecture: "arm", Variant: "v6"},
				{OS: "linux", Architecture: "arm", Variant: "v7"},
				{OS: "linux", Architecture: "amd64", Variant: "v2"},
				{OS: "linux", Architecture: "amd64"},
			},
			want: []string{"amd64", "arm"},
		},
		"aliases and case": {
			platforms: []Platform{
				{OS: "Linux", Architecture: "aarch64"},
				{OS: "linux", Architecture: "x86_64"},
			},
			want: []string{"amd64", "arm64"},
		},
		"no platform or no architecture skipped": {
			platforms: []Platform{
				{},
				{OS: "linux"},
				{Architecture: "amd64"},
				{OS: "linux", Architecture: "s390x"},
			},
			want: []string{"s390x"},
		},
		"windows only is empty": {
			platforms: []Platform{{OS: "windows", Architecture: "amd64"}},
			want:      []string{},
		},
		"empty list": {platforms: nil, want: []string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, LinuxArchitectures(tc.platforms)); diff != "" {
				t.Errorf("LinuxArchitectures() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigArchitectures(t *testing.T) {
	tests := map[string]struct {
		os, arch string
		want     []string
	}{
		"linux arm64":    {os: "linux", arch: "arm64", want: []string{"arm64"}},
		"no os":          {os: "", arch: "amd64", want: []string{"amd64"}},
		"alias":          {os: "linux", arch: "aarch64", want: []string{"arm64"}},
		"windows":        {os: "windows", arch: "amd64", want: []string{}},
		"no arch":        {os: "linux", arch: "", want: []string{}},
		"unknown arch":   {os: "linux", arch: "unknown", want: []string{}},
		"linux any case": {os: "LINUX", arch: "s390x", want: []string{"s390x"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ConfigArchitectures(tc.os, tc.arch)); diff != "" {
				t.Errorf("ConfigArchitectures(%q, %q) mismatch (-want +got):\n%s", tc.os, tc.arch, diff)
			}
		})
	}
}

func TestHasNoBinaries(t *testing.T) {
	tests := map[string]struct {
		labels map[string]string
		want   bool
	}{
		"bundle":              {labels: map[string]string{"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1"}, want: true},
		"bundle, empty value": {labels: map[string]string{"operators.operatorframework.io.bundle.mediatype.v1": ""}, want: true},
		"other label":         {labels: map[string]string{"org.opencontainers.image.title": "x"}, want: false},
		"no labels":           {labels: nil, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := HasNoBinaries(tc.labels); got != tc.want {
				t.Errorf("HasNoBinaries(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}

const (
	ociIndexWithAttestation = `{
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.index.v1+json",
  "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111", "size": 100, "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:2222222222222222222222222222222222222222222222222222222222222222", "size": 100, "platform": {"os": "linux", "architecture": "amd64"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:3333333333333333333333333333333333333333333333333333333333333333", "size": 100, "platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0.17763.1"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:4444444444444444444444444444444444444444444444444444444444444444", "size": 100, "platform": {"os": "unknown", "architecture": "unknown"}, "annotations": {"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111"}}
  ]
}`
	dockerManifestList = `{
  "schemaVersion": 2,
  "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
  "manifests": [
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": "sha256:5555555555555555555555555555555555555555555555555555555555555555", "size": 100, "platform": {"os": "linux", "architecture": "ppc64le"}},
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": "sha256:6666666666666666666666666666666666666666666666666666666666666666", "size": 100, "platform": {"os": "linux", "architecture": "s390x"}},
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": "sha256:7777777777777777777777777777777777777777777777777777777777777777", "size": 100, "platform": {"os": "linux", "architecture": "arm", "variant": "v7"}}
  ]
}`
)

func TestArchitecturesFromList(t *testing.T) {
	tests := map[string]struct {
		blob     string
		mimeType string
		want     []string
		wantErr  bool
	}{
		"oci index":            {blob: ociIndexWithAttestation, mimeType: imgspecv1.MediaTypeImageIndex, want: []string{"amd64", "arm64"}},
		"docker manifest list": {blob: dockerManifestList, mimeType: manifest.DockerV2ListMediaType, want: []string{"arm", "ppc64le", "s390x"}},
		"oci index listing one digest under two platforms": {
			blob: `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
				{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","size":1,"platform":{"os":"linux","architecture":"amd64"}},
				{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","size":1,"platform":{"os":"linux","architecture":"arm64"}}]}`,
			mimeType: imgspecv1.MediaTypeImageIndex, want: []string{"amd64", "arm64"},
		},
		"docker list listing one digest under two platforms": {
			blob: `{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[
				{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","digest":"sha256:5555555555555555555555555555555555555555555555555555555555555555","size":1,"platform":{"os":"linux","architecture":"s390x"}},
				{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","digest":"sha256:5555555555555555555555555555555555555555555555555555555555555555","size":1,"platform":{"os":"linux","architecture":"ppc64le"}}]}`,
			mimeType: manifest.DockerV2ListMediaType, want: []string{"ppc64le", "s390x"},
		},
		"single manifest type": {blob: `{}`, mimeType: imgspecv1.MediaTypeImageManifest, wantErr: true},
		"not json":             {blob: `{`, mimeType: imgspecv1.MediaTypeImageIndex, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ArchitecturesFromList([]byte(tc.blob), tc.mimeType)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ArchitecturesFromList() error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ArchitecturesFromList() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzPlatformsFromIndex feeds arbitrary bytes, under each list media type and the one
// podman would guess, through ArchitecturesFromList, the entry point the inspector uses:
// nothing may panic, and whatever comes out must be a sorted set of normalised, known
// architectures, with every linux entry of a parsed list represented.
func FuzzPlatformsFromIndex(f *testing.F) {
	f.Add([]byte(ociIndexWithAttestation))
	f.Add([]byte(dockerManifestList))
	f.Add([]byte(`{"manifests":[{"platform":null},{}]}`))
	f.Add([]byte(`{"manifests":[{"platform":{"os":"linux","architecture":"AARCH64/v8"}}]}`))
	f.Add([]byte(`{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","platform":{"os":"linux","architecture":"amd64"}},{"digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","platform":{"os":"linux","architecture":"arm64"}}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mt := range []string{imgspecv1.MediaTypeImageIndex, manifest.DockerV2ListMediaType, manifest.GuessMIMEType(data)} {
			archs, err := ArchitecturesFromList(data, mt)
			if err != nil {
				continue
			}
			if !slices.IsSorted(archs) || len(slices.Compact(slices.Clone(archs))) != len(archs) {
				t.Errorf("architectures %q are not a sorted set", archs)
			}
			for _, a := range archs {
				if a == "" || a == "unknown" || NormalizeArchitecture(a) != a {
					t.Errorf("architecture %q is not normalised", a)
				}
			}
			platforms, err := PlatformsFromBlob(data, mt)
			if err != nil {
				t.Fatalf("ArchitecturesFromList accepted what PlatformsFromBlob refuses: %v", err)
			}
			for _, p := range platforms {
				if a := NormalizeArchitecture(p.Architecture); a != "" && !isAttestation(p) &&
					strings.EqualFold(strings.TrimSpace(p.OS), "linux") && !slices.Contains(archs, a) {
					t.Errorf("linux entry %+v lost: architectures %q", p, archs)
				}
			}
		}
	})
}
