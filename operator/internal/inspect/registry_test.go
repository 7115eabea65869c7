package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	imgspecv1 "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/manifest"
	"golang.org/x/net/http/httpproxy"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/egress"
)

const bundleLabel = "operators.operatorframework.io.bundle.mediatype.v1"

var attestation = map[string]string{
	"vnd.docker.reference.type":   "attestation-manifest",
	"vnd.docker.reference.digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
}

func TestRegistryInspectorImageKinds(t *testing.T) {
	reg := newTestRegistry(t)
	multi := reg.pushIndex("oci/multi:1", testIndex(t, formatOCI,
		indexEntry{os: "linux", arch: "amd64"},
		indexEntry{os: "linux", arch: "arm64", variant: "v8"},
		indexEntry{os: "windows", arch: "amd64"},
		indexEntry{os: "unknown", arch: "unknown", annotations: attestation},
	))
	list := reg.pushIndex("docker/list:1", testIndex(t, formatDocker,
		indexEntry{os: "linux", arch: "ppc64le"},
		indexEntry{os: "linux", arch: "s390x"},
		indexEntry{os: "linux", arch: "arm", variant: "v7"},
	))
	noPlatform := reg.pushIndex("oci/no-platform:1", testIndex(t, formatOCI,
		indexEntry{os: "linux", arch: "amd64", noPlatform: true},
		indexEntry{os: "linux", arch: "arm64", noPlatform: true},
	))
	nested := reg.pushIndex("oci/nested:1", testIndex(t, formatOCI,
		indexEntry{noPlatform: true, nested: testIndex(t, formatOCI, indexEntry{os: "linux", arch: "s390x"}, indexEntry{os: "linux", arch: "ppc64le"})},
		indexEntry{os: "unknown", arch: "unknown", annotations: attestation},
	))
	ociSingle := reg.pushImage("oci/single:1", imageOf("linux", "arm64").withVariant("v8").inFormat(formatOCI).build(t))
	dockerSingle := reg.pushImage("docker/single:1", imageOf("linux", "amd64").build(t))
	deep := reg.pushImage("team/sub/deep/app:1", imageOf("linux", "s390x").build(t))
	bundle := reg.pushImage("operators/bundle:v1", imageOf("linux", "amd64").withLabels(map[string]string{bundleLabel: "registry+v1"}).build(t))
	windows := reg.pushImage("windows/only:1", imageOf("windows", "amd64").inFormat(formatOCI).build(t))
	hub := reg.pushImage("library/nginx:1.27", imageOf("linux", "arm64").build(t))

	// docker.io is remapped to the test registry: short names resolve as on a node.
	cfg := newPodmanConfig(t, sprintfConf(`
[[registry]]
prefix = "docker.io"
location = "%s"
`, reg.host))
	cfg.trust(t, reg)
	insp := mustInspector(t, cfg.options())

	tests := map[string]struct {
		image string
		want  Result
	}{
		"oci index with attestation and windows entries": {
			image: reg.host + "/oci/multi:1",
			want:  Result{Architectures: []string{"amd64", "arm64"}, Platforms: []string{"linux/amd64", "linux/arm64", "windows/amd64"}, Digest: multi, MediaType: imgspecv1.MediaTypeImageIndex},
		},
		"oci index by digest": {
			image: reg.host + "/oci/multi@" + multi,
			want:  Result{Architectures: []string{"amd64", "arm64"}, Platforms: []string{"linux/amd64", "linux/arm64", "windows/amd64"}, Digest: multi, MediaType: imgspecv1.MediaTypeImageIndex},
		},
		"tag and digest: the digest wins": {
			image: reg.host + "/oci/multi:no-such-tag@" + multi,
			want:  Result{Architectures: []string{"amd64", "arm64"}, Platforms: []string{"linux/amd64", "linux/arm64", "windows/amd64"}, Digest: multi, MediaType: imgspecv1.MediaTypeImageIndex},
		},
		"oci index whose entries name no platform: read from their configs": {
			image: reg.host + "/oci/no-platform:1",
			want:  Result{Architectures: []string{"amd64", "arm64"}, Platforms: []string{"linux/amd64", "linux/arm64"}, Digest: noPlatform, MediaType: imgspecv1.MediaTypeImageIndex},
		},
		"oci index nesting an index without a platform: its entries count": {
			image: reg.host + "/oci/nested:1",
			want:  Result{Architectures: []string{"ppc64le", "s390x"}, Platforms: []string{"linux/ppc64le", "linux/s390x"}, Digest: nested, MediaType: imgspecv1.MediaTypeImageIndex},
		},
		"docker manifest list": {
			image: reg.host + "/docker/list:1",
			want:  Result{Architectures: []string{"arm", "ppc64le", "s390x"}, Platforms: []string{"linux/arm", "linux/ppc64le", "linux/s390x"}, Digest: list, MediaType: manifest.DockerV2ListMediaType},
		},
		"single oci manifest": {
			image: reg.host + "/oci/single:1",
			want:  Result{Architectures: []string{"arm64"}, Platforms: []string{"linux/arm64"}, Digest: ociSingle, MediaType: imgspecv1.MediaTypeImageManifest},
		},
		"single docker schema2 manifest": {
			image: reg.host + "/docker/single:1",
			want:  Result{Architectures: []string{"amd64"}, Platforms: []string{"linux/amd64"}, Digest: dockerSingle, MediaType: manifest.DockerV2Schema2MediaType},
		},
		"deep path with registry port": {
			image: reg.host + "/team/sub/deep/app:1",
			want:  Result{Architectures: []string{"s390x"}, Platforms: []string{"linux/s390x"}, Digest: deep, MediaType: manifest.DockerV2Schema2MediaType},
		},
		"bundle image runs anywhere": {
			image: reg.host + "/operators/bundle:v1",
			want:  Result{Architectures: []string{}, AnyArchitecture: true, Platforms: []string{}, Digest: bundle, MediaType: manifest.DockerV2Schema2MediaType},
		},
		"windows single manifest: no linux architecture, one windows platform": {
			image: reg.host + "/windows/only:1",
			want:  Result{Architectures: []string{}, Platforms: []string{"windows/amd64"}, Digest: windows, MediaType: imgspecv1.MediaTypeImageManifest},
		},
		"short name through registries.conf": {
			image: "nginx:1.27",
			want:  Result{Architectures: []string{"arm64"}, Platforms: []string{"linux/arm64"}, Digest: hub, MediaType: manifest.DockerV2Schema2MediaType},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.want.Identity = credentials.Anonymous
			got, err := insp.Architectures(context.Background(), tc.image, nil)
			if err != nil {
				t.Fatalf("Architectures(%q) error = %v", tc.image, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Architectures(%q) mismatch (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

func TestRegistryInspectorErrors(t *testing.T) {
	reg := newTestRegistry(t)
	reg.pushImage("present:1", imageOf("linux", "amd64").build(t))
	var unresolved []indexEntry
	for range maxResolvedEntries + 1 {
		unresolved = append(unresolved, indexEntry{os: "linux", arch: "amd64", noPlatform: true})
	}
	reg.pushIndex("unresolved:1", testIndex(t, formatOCI, unresolved...))
	deep := testIndex(t, formatOCI, indexEntry{os: "linux", arch: "amd64", noPlatform: true})
	reg.pushIndex("too-deep:1", testIndex(t, formatOCI, indexEntry{noPlatform: true, nested: deep}))
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	insp := mustInspector(t, cfg.options())
	untrusted := mustInspector(t, newPodmanConfig(t, "").options())

	tests := map[string]struct {
		insp       *RegistryInspector
		image      string
		wantReason Reason
	}{
		"unknown tag":                           {insp: insp, image: reg.host + "/present:2", wantReason: ReasonNotFound},
		"too many entries without a platform":   {insp: insp, image: reg.host + "/unresolved:1", wantReason: ReasonOther},
		"platform-less entries two levels down": {insp: insp, image: reg.host + "/too-deep:1", wantReason: ReasonOther},
		"unknown repository":                    {insp: insp, image: reg.host + "/absent:1", wantReason: ReasonNotFound},
		"invalid reference":                     {insp: insp, image: reg.host + "/UPPER:1", wantReason: ReasonInvalidReference},
		"nothing listening":                     {insp: insp, image: closedAddress(t) + "/app:1", wantReason: ReasonNetwork},
		"certificate not trusted":               {insp: untrusted, image: reg.host + "/present:1", wantReason: ReasonNetwork},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := tc.insp.Architectures(context.Background(), tc.image, nil)
			if err == nil {
				t.Fatalf("Architectures(%q) error = nil, want %s", tc.image, tc.wantReason)
			}
			if got := ReasonOf(err); got != tc.wantReason {
				t.Errorf("ReasonOf(%v) = %s, want %s", err, got, tc.wantReason)
			}
		})
	}
}

func TestRegistryInspectorAuth(t *testing.T) {
	for scheme, opt := range map[string]registryOption{
		"basic":  withBasicAuth("alice", "right"),
		"bearer": withBearerAuth("alice", "right"),
	} {
		t.Run(scheme, func(t *testing.T) { testRegistryInspectorAuth(t, opt) })
	}
}

func testRegistryInspectorAuth(t *testing.T, auth registryOption) {
	reg := newTestRegistry(t, auth)
	reg.pushImage("private/app:1", imageOf("linux", "ppc64le").inFormat(formatOCI).build(t))
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	insp := mustInspector(t, cfg.options())
	img := reg.host + "/private/app:1"

	right := credentials.Credential{Auth: credentials.AuthConfig{Username: "alice", Password: "right"}}
	wrong := credentials.Credential{Auth: credentials.AuthConfig{Username: "alice", Password: "wrong"}, Source: credentials.Source{Namespace: "ns", Name: "stale"}}
	tests := map[string]struct {
		creds        credentials.Candidates
		wantIdentity credentials.Identity
		wantReason   Reason // "" means success
	}{
		"right credential":             {creds: credentials.Candidates{right}, wantIdentity: right.Identity()},
		"wrong credential":             {creds: credentials.Candidates{wrong}, wantReason: ReasonAuth},
		"anonymous":                    {creds: nil, wantReason: ReasonAuth},
		"wrong then right: next tried": {creds: credentials.Candidates{wrong, right}, wantIdentity: right.Identity()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := insp.Architectures(context.Background(), img, tc.creds)
			if tc.wantReason != "" {
				if gotReason := ReasonOf(err); gotReason != tc.wantReason {
					t.Fatalf("Architectures() error = %v (reason %q), want reason %q", err, gotReason, tc.wantReason)
				}
				if strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "right") {
					t.Errorf("Architectures() error %q contains a password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Architectures() error = %v", err)
			}
			if diff := cmp.Diff([]string{"ppc64le"}, got.Architectures); diff != "" {
				t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
			}
			if got.Identity != tc.wantIdentity {
				t.Errorf("Architectures() identity = %q, want %q", got.Identity, tc.wantIdentity)
			}
		})
	}
}

func TestRegistryInspectorMirror(t *testing.T) {
	mirror := newTestRegistry(t)
	mirror.pushIndex("team/app:1", testIndex(t, formatOCI,
		indexEntry{os: "linux", arch: "arm64"},
		indexEntry{os: "linux", arch: "s390x"},
	))
	primary := closedAddress(t) // the primary registry is down
	cfg := newPodmanConfig(t, sprintfConf(`
[[registry]]
location = "%s"

[[registry.mirror]]
location = "%s"
`, primary, mirror.host))
	cfg.trust(t, mirror)
	insp := mustInspector(t, cfg.options())

	got, err := insp.Architectures(context.Background(), primary+"/team/app:1", nil)
	if err != nil {
		t.Fatalf("Architectures() error = %v", err)
	}
	if diff := cmp.Diff([]string{"arm64", "s390x"}, got.Architectures); diff != "" {
		t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
	}
	if mirror.manifestGets.Load() == 0 {
		t.Error("the mirror served no manifest")
	}
}

func TestRegistryInspectorCABundle(t *testing.T) {
	reg := newTestRegistry(t)
	reg.pushImage("app:1", imageOf("linux", "s390x").build(t))
	cfg := newPodmanConfig(t, "") // certs.d stays empty: trust comes from the bundle only
	bundle := filepath.Join(t.TempDir(), "ca-bundle.crt")
	if err := os.WriteFile(bundle, reg.caPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := cfg.options()
	opts.CABundleFile = bundle
	got, err := mustInspector(t, opts).Architectures(context.Background(), reg.host+"/app:1", nil)
	if err != nil {
		t.Fatalf("Architectures() error = %v", err)
	}
	if diff := cmp.Diff([]string{"s390x"}, got.Architectures); diff != "" {
		t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
	}
}

func TestRegistryInspectorPlainHTTP(t *testing.T) {
	reg := newTestRegistry(t, withPlainHTTP())
	reg.pushImage("app:1", imageOf("linux", "arm64").build(t))
	img := reg.host + "/app:1"

	t.Run("refused unless the registry is insecure", func(t *testing.T) {
		_, err := mustInspector(t, newPodmanConfig(t, "").options()).Architectures(context.Background(), img, nil)
		if got := ReasonOf(err); got != ReasonNetwork {
			t.Errorf("Architectures() error = %v (reason %q), want reason %q", err, got, ReasonNetwork)
		}
	})
	t.Run("registries.conf insecure = true", func(t *testing.T) {
		cfg := newPodmanConfig(t, sprintfConf(`
[[registry]]
location = "%s"
insecure = true
`, reg.host))
		got, err := mustInspector(t, cfg.options()).Architectures(context.Background(), img, nil)
		if err != nil {
			t.Fatalf("Architectures() error = %v", err)
		}
		if diff := cmp.Diff([]string{"arm64"}, got.Architectures); diff != "" {
			t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("InsecureSkipTLSVerify option", func(t *testing.T) {
		opts := newPodmanConfig(t, "").options()
		opts.InsecureSkipTLSVerify = true
		got, err := mustInspector(t, opts).Architectures(context.Background(), img, nil)
		if err != nil {
			t.Fatalf("Architectures() error = %v", err)
		}
		if diff := cmp.Diff([]string{"arm64"}, got.Architectures); diff != "" {
			t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestRegistryInspectorTimeout(t *testing.T) {
	reg := newTestRegistry(t, withGate()) // the gate never opens: manifests hang
	reg.pushImage("app:1", imageOf("linux", "arm64").build(t))
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	opts := cfg.options()
	opts.Timeout = 200 * time.Millisecond
	_, err := mustInspector(t, opts).Architectures(context.Background(), reg.host+"/app:1", nil)
	if got := ReasonOf(err); got != ReasonTimeout {
		t.Errorf("Architectures() error = %v (reason %q), want reason %q", err, got, ReasonTimeout)
	}
	var ie *Error
	if !errors.As(err, &ie) {
		t.Errorf("Architectures() error %T is not an *Error", err)
	}
}

func TestNewRegistryInspectorValidatesPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts    Options
		wantErr string
	}{
		"missing registries.conf":  {opts: Options{RegistriesConfPath: filepath.Join(dir, "absent")}, wantErr: "registries.conf"},
		"certs.d is a file":        {opts: Options{CertsDir: file}, wantErr: "certs.d"},
		"CA bundle without PEM":    {opts: Options{CABundleFile: file}, wantErr: "no PEM certificate"},
		"missing CA bundle":        {opts: Options{CABundleFile: filepath.Join(dir, "absent")}, wantErr: "CA bundle"},
		"registries.conf.d a file": {opts: Options{RegistriesConfDirPath: file}, wantErr: "registries.conf.d"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewRegistryInspector(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewRegistryInspector() error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func sprintfConf(format string, args ...any) string {
	return strings.TrimLeft(fmt.Sprintf(format, args...), "\n")
}

// TestRegistryInspectorRequestsPerImage pins how many registry requests inspections cost: the
// first image of a registry pays its /v2/ ping (and, with token auth, a token), the next
// images of that registry only their manifest (and config), since the inspector keeps each
// host's challenge and each repository's token; the simulator's reports compare registry
// traffic against this physical minimum.
func TestRegistryInspectorRequestsPerImage(t *testing.T) {
	alice := credentials.Candidates{{Auth: credentials.AuthConfig{Username: "alice", Password: "right"}}}
	type step struct {
		image        string
		creds        credentials.Candidates
		wantRequests int64 // this inspection's
	}
	tests := map[string]struct {
		auth  []registryOption
		steps []step
	}{
		"index: ping and manifest, then the manifest alone": {
			steps: []step{{image: "app:1", wantRequests: 2}, {image: "other:1", wantRequests: 1}, {image: "app:1", wantRequests: 1}},
		},
		"single manifest: ping, manifest and config, then manifest and config": {
			steps: []step{{image: "single:1", wantRequests: 3}, {image: "single:2", wantRequests: 2}},
		},
		"bearer: ping, token and manifest; a token per repository and credential": {
			auth: []registryOption{withBearerAuth("alice", "right")},
			steps: []step{
				{image: "app:1", creds: alice, wantRequests: 3},
				{image: "app:2", creds: alice, wantRequests: 1},   // the repository's token is kept
				{image: "other:1", creds: alice, wantRequests: 2}, // another repository: its own token
				{image: "app:1", wantRequests: 4},                 // anonymous: its own token, refused, refreshed once; never alice's
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := newTestRegistry(t, tc.auth...)
			for _, repo := range []string{"app:1", "app:2", "other:1"} {
				reg.pushIndex(repo, testIndex(t, formatOCI, indexEntry{os: "linux", arch: "amd64"}))
			}
			reg.pushImage("single:1", imageOf("linux", "amd64").build(t))
			reg.pushImage("single:2", imageOf("linux", "arm64").build(t))
			cfg := newPodmanConfig(t, "")
			cfg.trust(t, reg)
			inspector := mustInspector(t, cfg.options())
			for i, s := range tc.steps {
				before := reg.requests.Load()
				_, err := inspector.Architectures(context.Background(), reg.host+"/"+s.image, s.creds)
				if s.creds == nil && reg.bearer {
					if ReasonOf(err) != ReasonAuth {
						t.Fatalf("step %d: anonymous Architectures(%s) error = %v, want reason auth", i+1, s.image, err)
					}
				} else if err != nil {
					t.Fatalf("step %d: Architectures(%s) error = %v", i+1, s.image, err)
				}
				if got := reg.requests.Load() - before; got != s.wantRequests {
					t.Errorf("step %d (%s): registry requests = %d, want %d", i+1, s.image, got, s.wantRequests)
				}
			}
		})
	}
}

// Through the controller's egress proxy, an image whose registry lies in a blocked network fails
// at once with reason blocked (the pod is released with it), and one outside is inspected as
// without the proxy; an index larger than a connection may carry fails without its bytes
// being parsed.
func TestRegistryInspectorThroughEgressProxy(t *testing.T) {
	reg := newTestRegistry(t)
	reg.pushImage("app:1", imageOf("linux", "arm64").build(t))
	entries := make([]indexEntry, 0, 200) // about 80 KB of index
	for range 200 {
		entries = append(entries, indexEntry{os: "linux", arch: "amd64", annotations: map[string]string{"pad": strings.Repeat("x", 300)}})
	}
	reg.pushIndex("big:1", testIndex(t, formatOCI, entries...))
	cfg := newPodmanConfig(t, "")
	cfg.trust(t, reg)
	defaults, err := egress.ParseNetworks(v1beta1.DefaultBlockedNetworks()) // loopback first, then link-local
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		blocked    []netip.Prefix
		image      string
		wantReason Reason // "" for success
	}{
		"outside the blocked networks": {blocked: defaults[2:], image: "app:1"},
		"loopback blocked":             {blocked: defaults, image: "app:1", wantReason: ReasonBlocked},
		"an index past the byte limit": {image: "big:1", wantReason: ReasonOther},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := egress.Listen(egress.Options{BlockedNetworks: tc.blocked, MaxBytesPerConnection: 32 << 10})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Start(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			opts := cfg.options()
			opts.Proxy = p.Route(&httpproxy.Config{})
			got, err := mustInspector(t, opts).Architectures(context.Background(), reg.host+"/"+tc.image, nil)
			if r := ReasonOf(err); r != tc.wantReason {
				t.Fatalf("Architectures() = %v, error %v (reason %q), want reason %q", got.Architectures, err, r, tc.wantReason)
			}
			if err == nil && !slices.Equal(got.Architectures, []string{"arm64"}) {
				t.Errorf("Architectures() = %v, want [arm64]", got.Architectures)
			}
		})
	}
}
