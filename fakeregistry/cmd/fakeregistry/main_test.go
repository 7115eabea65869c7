package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/archgate/archgate/fakeregistry"
)

// syncBuffer is a bytes.Buffer safe for one writer and one polling reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns the content so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServeStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	certs := t.TempDir()
	out := &syncBuffer{}
	cmd := newRootCommand()
	cmd.SetOut(out)
	cmd.SetErr(out)
	sock := filepath.Join(t.TempDir(), "metrics.sock")
	cmd.SetArgs([]string{"serve", "--catalog", "../../testdata/catalog.yaml", "--addr", "127.0.0.1:0", "--tls", "--certs-dir", certs,
		"--metrics-addr", "unix:" + sock})
	errc := make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	for i := 0; !strings.Contains(out.String(), "counters served at"); i++ {
		if i == 1000 {
			t.Fatalf("serve did not start; output:\n%s", out.String())
		}
		select {
		case err := <-errc:
			t.Fatalf("serve exited early: %v\n%s", err, out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	checkMetricsSocket(t, out.String(), certs, sock)
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(out.String(), "/library/multi:latest  oci-index  sha256:") {
		t.Errorf("output lacks the image list:\n%s", out.String())
	}
	matches, err := filepath.Glob(filepath.Join(certs, "127.0.0.1:*", "ca.crt"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("ca.crt files = %v (%v), want one for 127.0.0.1", matches, err)
	}
	if _, err := os.Stat(matches[0]); err != nil {
		t.Errorf("stat ca.crt: %v", err)
	}
}

// checkMetricsSocket asks the registry for a manifest and reads the count back from /metrics on
// the Unix socket.
func checkMetricsSocket(t *testing.T, out, certs, sock string) {
	t.Helper()
	url := regexp.MustCompile(`at (https://\S+) `).FindStringSubmatch(out)
	if url == nil {
		t.Fatalf("no registry URL in the output:\n%s", out)
	}
	cas, _ := filepath.Glob(filepath.Join(certs, "*", "ca.crt"))
	pem, err := os.ReadFile(cas[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	regClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := regClient.Head(url[1] + "/v2/library/multi/manifests/latest")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	unixClient := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err = unixClient.Get("http://registry/metrics")
	if err != nil {
		t.Fatalf("GET /metrics on %s: %v", sock, err)
	}
	defer resp.Body.Close()
	snap, err := fakeregistry.ParseSnapshot(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	key := fakeregistry.RepositoryKind{Repository: "library/multi", Kind: fakeregistry.KindManifestHead}
	if got := snap.Repositories[key]; got != 1 {
		t.Errorf("requests of %v read from /metrics = %d, want 1 (all: %v)", key, got, snap.Repositories)
	}
}

// parseServeFlags parses serve's flags from args, as cobra would.
func parseServeFlags(t *testing.T, args []string) *serveFlags {
	t.Helper()
	var f serveFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	f.changedFlags = fs.Changed
	return &f
}

// TestServeFlags checks how flags become options, and the errors for contradictory ones.
func TestServeFlags(t *testing.T) {
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(authFile, []byte("mode: bearer\nusers:\n  ci: {password: s3, repositories: [\"**\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args     []string
		wantErr  string
		wantAuth fakeregistry.Auth
		check    func(t *testing.T, o fakeregistry.Options)
	}{
		"certs-dir without tls":      {args: []string{"--certs-dir", "/tmp/x"}, wantErr: "--certs-dir needs --tls"},
		"hostname without tls":       {args: []string{"--hostname", "reg.test"}, wantErr: "--hostname needs --tls"},
		"push without writable":      {args: []string{"--auth-mode", "basic", "--user", "a:b", "--push", "a=**"}, wantErr: "--push needs --writable"},
		"no-delete without writable": {args: []string{"--no-delete"}, wantErr: "--no-delete needs --writable"},
		"no-delete": {
			args: []string{"--writable", "--no-delete"}, wantAuth: fakeregistry.Auth{Users: map[string]fakeregistry.User{}},
			check: func(t *testing.T, o fakeregistry.Options) {
				if !o.Writable || !o.NoDelete {
					t.Errorf("Writable, NoDelete = %t, %t; want true, true", o.Writable, o.NoDelete)
				}
			},
		},
		"users without auth mode": {args: []string{"--user", "a:b"}, wantErr: "need --auth-mode basic or bearer"},
		"rule for unknown user":   {args: []string{"--auth-mode", "basic", "--pull", "eve=**"}, wantErr: `unknown user "eve"`},
		"malformed user":          {args: []string{"--auth-mode", "basic", "--user", "alice"}, wantErr: "want NAME:PASSWORD"},
		"bad auth mode":           {args: []string{"--auth-mode", "digest"}, wantErr: ""},
		"bad latency":             {args: []string{"--latency", "ping=gamma:1s"}, wantErr: "unknown distribution"},
		"bad rate":                {args: []string{"--error-rate", "2"}, wantErr: "want within [0, 1]"},
		"auth flags": {
			args: []string{"--auth-mode", "basic", "--writable", "--user", "alice:pw", "--pull", "alice=team/**", "--push", "alice=team/app",
				"--anonymous", "library/*"},
			wantAuth: fakeregistry.Auth{Mode: fakeregistry.AuthBasic, Anonymous: []string{"library/*"},
				Users: map[string]fakeregistry.User{"alice": {Password: "pw", Repositories: []string{"team/**"}, Push: []string{"team/app"}}}},
		},
		"auth file with a flag on top": {
			args: []string{"--auth-file", authFile, "--user", "dev:pw", "--pull", "dev=dev/**"},
			wantAuth: fakeregistry.Auth{Mode: fakeregistry.AuthBearer, Users: map[string]fakeregistry.User{
				"ci": {Password: "s3", Repositories: []string{"**"}}, "dev": {Password: "pw", Repositories: []string{"dev/**"}}}},
		},
		"faults": {
			args: []string{"--latency", "manifest_get=lognormal:10ms,80ms", "--latency", "*=fixed:1ms", "--error-rate", "0.1",
				"--fault-kinds", "blob_get,manifest_get", "--outage", "reset", "--seed", "7"},
			wantAuth: fakeregistry.Auth{Users: map[string]fakeregistry.User{}},
			check: func(t *testing.T, o fakeregistry.Options) {
				want := fakeregistry.Faults{Outage: fakeregistry.OutageReset, ServerErrorRate: 0.1,
					Kinds: []fakeregistry.RequestKind{fakeregistry.KindBlobGet, fakeregistry.KindManifestGet},
					Latency: map[fakeregistry.RequestKind]fakeregistry.Latency{
						fakeregistry.KindManifestGet: fakeregistry.LogNormalLatency(10*time.Millisecond, 80*time.Millisecond),
						fakeregistry.AllKinds:        fakeregistry.FixedLatency(time.Millisecond)}}
				if diff := cmp.Diff(want, o.Faults); diff != "" || o.Seed != 7 {
					t.Errorf("faults (-want +got):\n%s seed %d", diff, o.Seed)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := parseServeFlags(t, tc.args)
			opts, err := f.options()
			if tc.wantErr != "" || name == "bad auth mode" {
				if err == nil && name == "bad auth mode" {
					// The mode is validated by Start, which names it.
					_, err = fakeregistry.Start(t.Context(), opts)
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("options: %v", err)
			}
			if diff := cmp.Diff(tc.wantAuth, opts.Auth); diff != "" {
				t.Errorf("auth (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, opts)
			}
		})
	}
}

func TestServeWarnsAboutAnEmptyCatalog(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	cmd := newRootCommand()
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SetArgs([]string{"serve", "--addr", "127.0.0.1:0"})
	cancel() // serve starts, reports and returns at once
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(errOut.String(), "warning: the catalog is empty") {
		t.Errorf("stderr = %q, want the empty-catalog warning", errOut.String())
	}
}
