package fakeregistry

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.podman.io/image/v5/types"
)

// testAuth returns an Auth of mode with alice (everything), bob (team/**) and anonymous library/*.
func testAuth(mode AuthMode) Auth {
	return Auth{
		Mode: mode,
		Users: map[string]User{
			"alice": {Password: "alice-secret", Repositories: []string{"**"}},
			"bob":   {Password: "bob-secret", Repositories: []string{"team/**"}},
		},
		Anonymous: []string{"library/*"},
	}
}

// TestPodmanInspectsEveryImageKind inspects every catalog image kind with containers/image over TLS and
// plain HTTP, without auth and with basic and bearer auth, and checks the platforms it reports.
func TestPodmanInspectsEveryImageKind(t *testing.T) {
	refs := map[string]string{
		"oci index with attestations":       "library/multi:latest",
		"docker manifest list with windows": "team/dockerlist:v2",
		"single oci manifest":               "team/app/api:v1",
		"single docker schema2 manifest":    "legacy/tool:3.1",
		"operator bundle without binaries":  "operators/bundle:v0.1.0",
		"generated image":                   "gen/app-07:v1",
		"second tag of the oci index":       "library/multi:1.0",
	}
	for _, useTLS := range []bool{true, false} {
		for _, mode := range []AuthMode{AuthNone, AuthBasic, AuthBearer} {
			transport := map[bool]string{true: "tls", false: "http"}[useTLS]
			t.Run(transport+"/"+modeName(mode), func(t *testing.T) {
				reg := startRegistry(t, Options{TLS: useTLS, Auth: testAuth(mode)})
				sys := podmanSystemContext(t, reg, "alice", "alice-secret")
				for name, ref := range refs {
					t.Run(name, func(t *testing.T) {
						ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
						defer cancel()
						im, err := reg.Catalog().Image(ref)
						if err != nil {
							t.Fatalf("catalog Image: %v", err)
						}
						got, err := inspectImage(ctx, sys, reg.Host()+"/"+ref)
						if err != nil {
							t.Fatalf("inspect %s: %v", ref, err)
						}
						if diff := cmp.Diff(expectedInspection(im), got); diff != "" {
							t.Errorf("inspection of %s (-want +got):\n%s", ref, diff)
						}
					})
				}
			})
		}
	}
}

// modeName names an auth mode in subtest names.
func modeName(m AuthMode) string {
	if m == AuthNone {
		return "none"
	}
	return string(m)
}

func TestPodmanDockerCertPath(t *testing.T) {
	reg := startRegistry(t, Options{TLS: true})
	sys := podmanSystemContext(t, reg, "", "")
	dir, err := reg.WriteCertsDir(t.TempDir())
	if err != nil {
		t.Fatalf("WriteCertsDir: %v", err)
	}
	if got, want := filepath.Base(dir), reg.Host(); got != want {
		t.Errorf("certs dir = %s, want a directory named %s", dir, want)
	}
	sys.DockerPerHostCertDirPath = ""
	sys.DockerCertPath = dir
	if _, err := inspectImage(t.Context(), sys, reg.Reference("team/app/api", "v1")); err != nil {
		t.Fatalf("inspect with DockerCertPath: %v", err)
	}
}

func TestPodmanNeedsCAForTLS(t *testing.T) {
	reg := startRegistry(t, Options{TLS: true})
	sys := podmanSystemContext(t, reg, "", "")
	sys.DockerPerHostCertDirPath = filepath.Join(t.TempDir(), "empty")
	if _, err := inspectImage(t.Context(), sys, reg.Reference("team/app/api", "v1")); err == nil {
		t.Fatal("inspect without the CA succeeded, want a certificate error")
	}
}

func TestPodmanPlainHTTPNeedsInsecure(t *testing.T) {
	reg := startRegistry(t, Options{})
	sys := podmanSystemContext(t, reg, "", "")
	sys.DockerInsecureSkipTLSVerify = types.OptionalBoolUndefined
	_, err := inspectImage(t.Context(), sys, reg.Reference("team/app/api", "v1"))
	if err == nil || !strings.Contains(err.Error(), "HTTP response to HTTPS client") {
		t.Fatalf("error = %v, want the https attempt to fail against plain HTTP", err)
	}
}

// TestPodmanAuthDenied checks what containers/image meets with wrong credentials or a repository
// outside the user's rules, by the statuses the registry answered.
func TestPodmanAuthDenied(t *testing.T) {
	tests := map[string]struct {
		mode         AuthMode
		user, pass   string
		ref          string
		wantStatuses map[KindStatus]uint64
	}{
		"basic wrong password": {
			mode: AuthBasic, user: "bob", pass: "wrong", ref: "team/app/api:v1",
			wantStatuses: map[KindStatus]uint64{{KindPing, 401}: 1, {KindManifestGet, 401}: 1},
		},
		"basic repository outside rules": {
			mode: AuthBasic, user: "bob", pass: "bob-secret", ref: "legacy/tool:3.1",
			wantStatuses: map[KindStatus]uint64{{KindPing, 401}: 1, {KindManifestGet, 403}: 1},
		},
		"basic anonymous on protected repository": {
			mode: AuthBasic, ref: "team/app/api:v1",
			wantStatuses: map[KindStatus]uint64{{KindPing, 401}: 1, {KindManifestGet, 401}: 1},
		},
		"bearer wrong password": {
			mode: AuthBearer, user: "bob", pass: "wrong", ref: "team/app/api:v1",
			wantStatuses: map[KindStatus]uint64{{KindPing, 401}: 1, {KindToken, 401}: 1},
		},
		// The token endpoint grants no scope; the registry answers 401 insufficient_scope and the
		// client fetches another token and retries once, as against Docker Hub.
		"bearer repository outside rules": {
			mode: AuthBearer, user: "bob", pass: "bob-secret", ref: "legacy/tool:3.1",
			wantStatuses: map[KindStatus]uint64{{KindPing, 401}: 1, {KindToken, 200}: 2, {KindManifestGet, 401}: 2},
		},
		"bearer anonymous on protected repository": {
			mode: AuthBearer, ref: "team/app/api:v1",
			wantStatuses: map[KindStatus]uint64{{KindPing, 401}: 1, {KindToken, 200}: 2, {KindManifestGet, 401}: 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{TLS: true, Auth: testAuth(tc.mode)})
			sys := podmanSystemContext(t, reg, tc.user, tc.pass)
			_, err := inspectImage(t.Context(), sys, reg.Host()+"/"+tc.ref)
			if err == nil {
				t.Fatal("inspect succeeded, want an auth error")
			}
			if diff := cmp.Diff(tc.wantStatuses, reg.Counters().Snapshot().Responses); diff != "" {
				t.Errorf("responses (-want +got):\n%s\nclient error: %v", diff, err)
			}
		})
	}
}

func TestPodmanAnonymousAllowedRepository(t *testing.T) {
	for _, mode := range []AuthMode{AuthBasic, AuthBearer} {
		t.Run(string(mode), func(t *testing.T) {
			reg := startRegistry(t, Options{TLS: true, Auth: testAuth(mode)})
			sys := podmanSystemContext(t, reg, "", "")
			got, err := inspectImage(t.Context(), sys, reg.Reference("library/multi", "latest"))
			if err != nil {
				t.Fatalf("anonymous inspect of a public repository: %v", err)
			}
			if len(got.Configs) != 4 {
				t.Errorf("configs = %v, want 4 platforms", got.Configs)
			}
		})
	}
}

// TestAuthHTTP checks statuses and challenges on the wire.
func TestAuthHTTP(t *testing.T) {
	tests := map[string]struct {
		mode          AuthMode
		path          string
		user, pass    string
		bearerFor     string // fetch a token as user for this scope first
		wantStatus    int
		wantChallenge string // substring of WWW-Authenticate
	}{
		"basic ping anonymous":          {mode: AuthBasic, path: "/v2/", wantStatus: 401, wantChallenge: `Basic realm="fakeregistry"`},
		"basic ping user":               {mode: AuthBasic, path: "/v2/", user: "bob", pass: "bob-secret", wantStatus: 200},
		"basic wrong password":          {mode: AuthBasic, path: "/v2/team/app/api/manifests/v1", user: "bob", pass: "x", wantStatus: 401, wantChallenge: "Basic"},
		"basic unknown user":            {mode: AuthBasic, path: "/v2/team/app/api/manifests/v1", user: "eve", pass: "x", wantStatus: 401, wantChallenge: "Basic"},
		"basic allowed":                 {mode: AuthBasic, path: "/v2/team/app/api/manifests/v1", user: "bob", pass: "bob-secret", wantStatus: 200},
		"basic forbidden":               {mode: AuthBasic, path: "/v2/legacy/tool/manifests/3.1", user: "bob", pass: "bob-secret", wantStatus: 403},
		"basic anonymous public":        {mode: AuthBasic, path: "/v2/library/multi/manifests/latest", wantStatus: 200},
		"basic anonymous private":       {mode: AuthBasic, path: "/v2/team/app/api/manifests/v1", wantStatus: 401, wantChallenge: "Basic"},
		"bearer ping":                   {mode: AuthBearer, path: "/v2/", wantStatus: 401, wantChallenge: `/token",service="fakeregistry"`},
		"bearer no token":               {mode: AuthBearer, path: "/v2/team/app/api/manifests/v1", wantStatus: 401, wantChallenge: `scope="repository:team/app/api:pull"`},
		"bearer granted":                {mode: AuthBearer, path: "/v2/team/app/api/manifests/v1", user: "bob", pass: "bob-secret", bearerFor: "team/app/api", wantStatus: 200},
		"bearer other repository":       {mode: AuthBearer, path: "/v2/team/dockerlist/manifests/v2", user: "bob", pass: "bob-secret", bearerFor: "team/app/api", wantStatus: 401, wantChallenge: `error="insufficient_scope"`},
		"bearer not allowed":            {mode: AuthBearer, path: "/v2/legacy/tool/manifests/3.1", user: "bob", pass: "bob-secret", bearerFor: "legacy/tool", wantStatus: 401, wantChallenge: `error="insufficient_scope"`},
		"bearer anonymous public":       {mode: AuthBearer, path: "/v2/library/multi/manifests/latest", bearerFor: "library/multi", wantStatus: 200},
		"token wrong password":          {mode: AuthBearer, path: "/token?scope=repository:team/app/api:pull", user: "bob", pass: "x", wantStatus: 401},
		"token endpoint without bearer": {mode: AuthBasic, path: "/token", user: "bob", pass: "bob-secret", wantStatus: 404},
		"writes are rejected":           {mode: AuthNone, path: "/v2/a/b/blobs/uploads/", wantStatus: 405},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t, Options{TLS: true, Auth: testAuth(tc.mode)})
			client := httpClient(reg)
			method := http.MethodGet
			if name == "writes are rejected" {
				method = http.MethodPost
			}
			req, err := http.NewRequestWithContext(t.Context(), method, reg.URL()+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.bearerFor != "":
				req.Header.Set("Authorization", "Bearer "+fetchToken(t, reg, client, tc.user, tc.pass, tc.bearerFor))
			case tc.user != "":
				req.SetBasicAuth(tc.user, tc.pass)
			}
			req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json,application/vnd.oci.image.manifest.v1+json,application/vnd.docker.distribution.manifest.v2+json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, tc.wantChallenge) {
				t.Errorf("WWW-Authenticate = %q, want it to contain %q", got, tc.wantChallenge)
			}
		})
	}
}

// fetchToken gets a bearer token for pulling repo, as user (anonymous when empty).
func fetchToken(t *testing.T, reg *Registry, client *http.Client, user, pass, repo string) string {
	t.Helper()
	return fetchScopedToken(t, reg, client, user, pass, "repository:"+repo+":pull")
}

// fetchScopedToken gets a bearer token for scope, as user (anonymous when empty).
func fetchScopedToken(t *testing.T, reg *Registry, client *http.Client, user, pass, scope string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		reg.URL()+"/token?service=fakeregistry&scope="+scope, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token status %d: %s", resp.StatusCode, body)
	}
	tok, _, _ := strings.Cut(strings.TrimPrefix(string(body), `{"token":"`), `"`)
	return tok
}

// TestGGCRClient checks go-containerregistry's remote client: it tries https first even for
// 127.0.0.1/localhost names and falls back to http, so a transport that trusts the CA works over TLS and
// plain HTTP works without flags; auth goes through its own token flow.
func TestGGCRClient(t *testing.T) {
	for _, useTLS := range []bool{true, false} {
		for _, mode := range []AuthMode{AuthNone, AuthBasic, AuthBearer} {
			transport := map[bool]string{true: "tls", false: "http"}[useTLS]
			t.Run(transport+"/"+modeName(mode), func(t *testing.T) {
				reg := startRegistry(t, Options{TLS: useTLS, Auth: testAuth(mode)})
				ref, err := name.ParseReference(reg.Reference("library/multi", "latest"))
				if err != nil {
					t.Fatal(err)
				}
				opts := []remote.Option{
					remote.WithContext(t.Context()),
					remote.WithTransport(httpClient(reg).Transport),
					remote.WithAuth(&authn.Basic{Username: "alice", Password: "alice-secret"}),
				}
				idx, err := remote.Index(ref, opts...)
				if err != nil {
					t.Fatalf("remote.Index: %v", err)
				}
				im, err := idx.IndexManifest()
				if err != nil {
					t.Fatalf("IndexManifest: %v", err)
				}
				if got := len(im.Manifests); got != 8 {
					t.Errorf("index entries = %d, want 8 (4 images, 4 attestations)", got)
				}
			})
		}
	}
}

func TestCloseReleasesAndIsIdempotent(t *testing.T) {
	reg, err := Start(t.Context(), Options{Catalog: testCatalog(t), Faults: Faults{HangRate: 1}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(reg.URL() + "/v2/")
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, "the request to be held", func() bool { return reg.Counters().Snapshot().Faults[FaultHang] == 1 })
	if err := reg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; err == nil {
		t.Errorf("held request got a response, want it aborted")
	}
	if err := reg.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStopsWhenContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	reg, err := Start(ctx, Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	cancel()
	waitFor(t, "the listener to close", func() bool {
		resp, err := http.Get(reg.URL() + "/v2/")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
	if err := reg.Close(); err != nil {
		t.Errorf("Close after context: %v", err)
	}
}

func TestWriteCertsDirLayout(t *testing.T) {
	reg := startRegistry(t, Options{TLS: true, TLSHostname: "registry.archgate.test"})
	root := t.TempDir()
	if _, err := reg.WriteCertsDir(root); err != nil {
		t.Fatalf("WriteCertsDir: %v", err)
	}
	_, port, _ := strings.Cut(reg.Host(), ":")
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "registry.archgate.test:" + port} {
		got, err := os.ReadFile(filepath.Join(root, host, "ca.crt"))
		if err != nil {
			t.Errorf("reading %s/ca.crt: %v", host, err)
			continue
		}
		if diff := cmp.Diff(string(reg.CACertPEM()), string(got)); diff != "" {
			t.Errorf("%s/ca.crt differs from CACertPEM (-want +got):\n%s", host, diff)
		}
	}
	plain := startRegistry(t, Options{})
	if _, err := plain.WriteCertsDir(root); err == nil {
		t.Errorf("WriteCertsDir on plain HTTP succeeded, want error")
	}
}

// TestTLSHostnameIP serves on a loopback address other than 127.0.0.1 named by TLSHostname: the
// certificate must carry it as an IP SAN, or a client reaching the registry by IP (as a kubelet
// does on a node IP) fails verification.
func TestTLSHostnameIP(t *testing.T) {
	reg := startRegistry(t, Options{TLS: true, Addr: "127.0.0.2:0", TLSHostname: "127.0.0.2"})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: reg.CertPool()}}}
	resp, err := client.Get("https://" + reg.Host() + "/v2/")
	if err != nil {
		t.Fatalf("GET /v2/ by IP: %v", err)
	}
	_ = resp.Body.Close()
}

func TestStartRejectsBadOptions(t *testing.T) {
	tests := map[string]Options{
		"bad auth mode":      {Auth: Auth{Mode: "digest"}},
		"bad pattern":        {Auth: Auth{Mode: AuthBasic, Anonymous: []string{"["}}},
		"bad fault rate":     {Faults: Faults{ServerErrorRate: 2}},
		"bad latency":        {Faults: Faults{Latency: map[RequestKind]Latency{KindPing: LogNormalLatency(0, 1)}}},
		"unknown fault kind": {Faults: Faults{Kinds: []RequestKind{"manifest_put"}}},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			reg, err := Start(t.Context(), opts)
			if err == nil {
				_ = reg.Close()
				t.Fatal("Start succeeded, want error")
			}
			if errors.Is(err, context.Canceled) {
				t.Fatalf("unexpected error %v", err)
			}
		})
	}
}
