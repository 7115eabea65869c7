package inspect

import (
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is an in-process registry: one go-containerregistry store served twice, over
// TLS to the code under test (counted, optionally gated and authenticated) and over plain
// HTTP to the test itself for pushing.
type testRegistry struct {
	t    testing.TB
	srv  *httptest.Server // what the inspector talks to
	push *httptest.Server // what the test pushes through
	host string           // host:port of srv

	requests     atomic.Int64 // every request to srv
	passwords    sync.Map     // every basic-auth password sent to srv (token endpoint included)
	manifestGets atomic.Int64 // GET/HEAD of manifests on srv

	user, pass string        // basic (or bearer, see bearer) auth on srv when user != ""
	bearer     bool          // token auth: a /token endpoint trades user/pass for a bearer token
	tokenGets  atomic.Int64  // requests to /token
	gate       chan struct{} // when non-nil, manifest requests on srv wait for it to close
	plainHTTP  bool          // serve srv without TLS
}

type registryOption func(*testRegistry)

func withBasicAuth(user, pass string) registryOption {
	return func(r *testRegistry) { r.user, r.pass = user, pass }
}

// withBearerAuth protects the registry like Docker Hub or Quay do: 401 with a Bearer
// challenge, and a token endpoint that accepts user/pass (a good token) or nothing (an
// anonymous token without access).
func withBearerAuth(user, pass string) registryOption {
	return func(r *testRegistry) { r.user, r.pass, r.bearer = user, pass, true }
}

func withGate() registryOption {
	return func(r *testRegistry) { r.gate = make(chan struct{}) }
}

// withPlainHTTP serves the inspector without TLS.
func withPlainHTTP() registryOption { return func(r *testRegistry) { r.plainHTTP = true } }

func newTestRegistry(t testing.TB, opts ...registryOption) *testRegistry {
	t.Helper()
	store := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r := &testRegistry{t: t}
	for _, o := range opts {
		o(r)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if _, p, ok := req.BasicAuth(); ok {
			r.passwords.Store(p, true)
		}
		isManifest := strings.Contains(req.URL.Path, "/manifests/")
		if isManifest {
			r.manifestGets.Add(1)
		}
		if r.bearer {
			if !r.authorizeBearer(w, req) {
				return
			}
		} else if r.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
		}
		if isManifest && r.gate != nil {
			select {
			case <-r.gate:
			case <-req.Context().Done():
				// Abort: a handler that returns would answer an empty 200, which a client
				// still reading (the transport retries a GET whose connection broke) would
				// parse.
				panic(http.ErrAbortHandler)
			}
		}
		store.ServeHTTP(w, req)
	})
	r.srv = httptest.NewUnstartedServer(handler)
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshake failures are expected in some tests
	if r.plainHTTP {
		r.srv.Start()
	} else {
		r.srv.StartTLS()
	}
	t.Cleanup(r.srv.Close)
	r.push = httptest.NewServer(store)
	t.Cleanup(r.push.Close)
	r.host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "https://"), "http://")
	return r
}

const goodToken = "token-with-pull-access"

// authorizeBearer serves /token and checks bearer tokens; it reports whether req may go on
// to the registry.
func (r *testRegistry) authorizeBearer(w http.ResponseWriter, req *http.Request) bool {
	if req.URL.Path == "/token" {
		r.tokenGets.Add(1)
		token := "anonymous-token"
		if u, p, ok := req.BasicAuth(); ok {
			if u != r.user || p != r.pass {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`)
				return false
			}
			token = goodToken
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"token":"`+token+`","expires_in":300}`)
		return false
	}
	got := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if got == goodToken {
		return true
	}
	challenge := `Bearer realm="` + r.srv.URL + `/token",service="test-registry"`
	if got != "" {
		challenge += `,error="insufficient_scope"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
	return false
}

// caPEM returns the PEM certificate of the TLS server (self-signed, so also its CA).
func (r *testRegistry) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// pushImage pushes img as repo:tag and returns its digest.
func (r *testRegistry) pushImage(repoTag string, img v1.Image) string {
	r.t.Helper()
	ref := r.pushRef(repoTag)
	if err := remote.Write(ref, img); err != nil {
		r.t.Fatalf("pushing %s: %v", repoTag, err)
	}
	d, err := img.Digest()
	if err != nil {
		r.t.Fatal(err)
	}
	return d.String()
}

// pushIndex pushes idx (and its images) as repo:tag and returns its digest.
func (r *testRegistry) pushIndex(repoTag string, idx v1.ImageIndex) string {
	r.t.Helper()
	ref := r.pushRef(repoTag)
	if err := remote.WriteIndex(ref, idx); err != nil {
		r.t.Fatalf("pushing %s: %v", repoTag, err)
	}
	d, err := idx.Digest()
	if err != nil {
		r.t.Fatal(err)
	}
	return d.String()
}

func (r *testRegistry) pushRef(repoTag string) name.Reference {
	r.t.Helper()
	host := strings.TrimPrefix(r.push.URL, "http://")
	ref, err := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err != nil {
		r.t.Fatal(err)
	}
	return ref
}

// imageFormat is the media types of a test image or index.
type imageFormat int

const (
	// formatDocker is Docker schema 2 (a manifest list for an index).
	formatDocker imageFormat = iota
	// formatOCI is OCI (an image index for an index).
	formatOCI
)

// imageBuilder builds layer-less test images whose config says os/arch/variant and carries
// labels.
type imageBuilder struct {
	os, arch, variant string
	labels            map[string]string
	format            imageFormat
}

// imageOf starts a Docker schema 2 image for os/arch.
func imageOf(os, arch string) *imageBuilder { return &imageBuilder{os: os, arch: arch} }

func (b *imageBuilder) withVariant(v string) *imageBuilder { b.variant = v; return b }

func (b *imageBuilder) withLabels(l map[string]string) *imageBuilder { b.labels = l; return b }

func (b *imageBuilder) inFormat(f imageFormat) *imageBuilder { b.format = f; return b }

func (b *imageBuilder) build(t testing.TB) v1.Image {
	t.Helper()
	cfg, err := empty.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = b.os, b.arch, b.variant
	cfg.Config.Labels = b.labels
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b.format == formatOCI {
		img = mutate.ConfigMediaType(mutate.MediaType(img, ggcrtypes.OCIManifestSchema1), ggcrtypes.OCIConfigJSON)
	}
	return img
}

// indexEntry is one entry of a test index: an image of os/arch/variant, or the nested index
// when set; noPlatform leaves the entry's platform out.
type indexEntry struct {
	os, arch, variant string
	annotations       map[string]string
	noPlatform        bool
	nested            v1.ImageIndex
}

// testIndex returns an OCI index or a Docker manifest list (format) of images with the
// platforms of entries.
func testIndex(t testing.TB, format imageFormat, entries ...indexEntry) v1.ImageIndex {
	t.Helper()
	var idx v1.ImageIndex = empty.Index
	if format == formatDocker {
		idx = mutate.IndexMediaType(idx, ggcrtypes.DockerManifestList)
	}
	for _, e := range entries {
		var add mutate.Appendable = imageOf(e.os, e.arch).withVariant(e.variant).inFormat(format).build(t)
		if e.nested != nil {
			add = e.nested
		}
		mt, err := add.MediaType()
		if err != nil {
			t.Fatal(err)
		}
		desc := v1.Descriptor{MediaType: mt, Annotations: e.annotations}
		if !e.noPlatform {
			desc.Platform = &v1.Platform{OS: e.os, Architecture: e.arch, Variant: e.variant}
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: add, Descriptor: desc})
	}
	return idx
}

// podmanConfig is a temporary registries.conf, its drop-in directory, a registries.d and a
// certs.d, so that nothing of the machine's /etc/containers or $HOME is read.
type podmanConfig struct {
	dir string
}

func newPodmanConfig(t testing.TB, registriesConf string) podmanConfig {
	t.Helper()
	c := podmanConfig{dir: t.TempDir()}
	for _, d := range []string{"registries.conf.d", "registries.d", "certs.d"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.dir, "registries.conf"), []byte(registriesConf), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// trust writes the registry's CA into certs.d/<host:port>/ca.crt.
func (c podmanConfig) trust(t testing.TB, r *testRegistry) {
	t.Helper()
	d := filepath.Join(c.certsDir(), r.host)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "ca.crt"), r.caPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (c podmanConfig) certsDir() string { return filepath.Join(c.dir, "certs.d") }

func (c podmanConfig) options() Options {
	return Options{
		RegistriesConfPath:    filepath.Join(c.dir, "registries.conf"),
		RegistriesConfDirPath: filepath.Join(c.dir, "registries.conf.d"),
		RegistriesDirPath:     filepath.Join(c.dir, "registries.d"),
		CertsDir:              c.certsDir(),
		Timeout:               20 * time.Second,
	}
}

// closedAddress returns a loopback host:port on which nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// waitFor polls cond until it holds, failing the test after a generous bound. It is for
// waiting on other goroutines, never for asserting how long anything takes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustInspector(t testing.TB, opts Options) *RegistryInspector {
	t.Helper()
	r, err := NewRegistryInspector(opts)
	if err != nil {
		t.Fatalf("NewRegistryInspector() error = %v", err)
	}
	return r
}
