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

package egress

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http/httpproxy"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startProxy serves a proxy for the test and returns it with a client that uses it.
func startProxy(t *testing.T, opts Options, rootCAs *httptest.Server) (*Proxy, *http.Client) {
	t.Helper()
	p, err := Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	tr := &http.Transport{Proxy: http.ProxyURL(p.URL())}
	if rootCAs != nil {
		tr.TLSClientConfig = rootCAs.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	t.Cleanup(tr.CloseIdleConnections)
	return p, &http.Client{Transport: tr}
}

func TestProxy(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 256<<10)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = w.Write(big)
			return
		}
		_, _ = io.WriteString(w, "manifest")
	})
	tlsServer := httptest.NewTLSServer(handler)
	t.Cleanup(tlsServer.Close)
	plainServer := httptest.NewServer(handler)
	t.Cleanup(plainServer.Close)

	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := map[string]struct {
		blocked     []netip.Prefix
		server      *httptest.Server
		path        string
		wantBody    string
		wantErr     string // in the request's or the body read's error, or in a refusal's body
		wantRefusal string // the metric's reason label that counts one
		// insecureNone: no host is configured insecure (otherwise the plain server is)
		insecureNone bool
	}{
		"TLS through the tunnel":            {server: tlsServer, path: "/m", wantBody: "manifest"},
		"plain HTTP forwarded":              {server: plainServer, path: "/m", wantBody: "manifest"},
		"a blocked address, TLS":            {blocked: loopback, server: tlsServer, path: "/m", wantErr: Marker, wantRefusal: ReasonBlockedNetwork},
		"a blocked address, plain HTTP":     {blocked: loopback, server: plainServer, path: "/m", wantErr: Marker, wantRefusal: ReasonBlockedNetwork},
		"another network blocked":           {blocked: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, server: tlsServer, path: "/m", wantBody: "manifest"},
		"too many bytes on one connection":  {server: tlsServer, path: "/big", wantErr: "EOF", wantRefusal: ReasonByteLimit},
		"too many bytes, plain HTTP":        {server: plainServer, path: "/big", wantErr: "EOF", wantRefusal: ReasonByteLimit},
		"plain HTTP to a host not insecure": {insecureNone: true, server: plainServer, path: "/m", wantErr: Marker, wantRefusal: ReasonPlainHTTP},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ca *httptest.Server
			if tc.server == tlsServer {
				ca = tlsServer
			}
			plain := strings.TrimPrefix(plainServer.URL, "http://")
			insecure := func(host string) bool { return host == plain && !tc.insecureNone }
			p, client := startProxy(t, Options{BlockedNetworks: tc.blocked, MaxBytesPerConnection: 64 << 10, PlainHTTP: insecure}, ca)
			body, err := get(client, tc.server.URL+tc.path)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("GET: %v", err)
			case tc.wantErr == "" && body != tc.wantBody:
				t.Errorf("body %q, want %q", body, tc.wantBody)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) && !strings.Contains(body, tc.wantErr):
				t.Errorf("GET: error %v, body %.80q; want %q in either", err, body, tc.wantErr)
			}
			for _, reason := range []string{ReasonBlockedNetwork, ReasonByteLimit, ReasonPlainHTTP} {
				want := 0.0
				if reason == tc.wantRefusal {
					want = 1
				}
				if got := testutil.ToFloat64(p.refusals.WithLabelValues(reason)); got != want {
					t.Errorf("%s{reason=%q} = %v, want %v", MetricRefusals, reason, got, want)
				}
			}
		})
	}
}

// get reads url's body; a refusal's body comes back with its status as an error.
func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		return string(b), &statusError{resp.Status}
	}
	return string(b), err
}

type statusError struct{ status string }

func (e *statusError) Error() string { return e.status }

func TestParseNetworks(t *testing.T) {
	tests := map[string]struct {
		in      []string
		want    []string
		wantErr string
	}{
		"IPv4 and IPv6":     {in: []string{"10.0.0.0/8", "fd00::/8"}, want: []string{"10.0.0.0/8", "fd00::/8"}},
		"host bits cleared": {in: []string{"10.1.2.3/16"}, want: []string{"10.1.0.0/16"}},
		"an address alone":  {in: []string{"10.0.0.1"}, wantErr: `network "10.0.0.1"`},
		"not an address":    {in: []string{"cluster"}, wantErr: `network "cluster"`},
		"none":              {in: nil, want: []string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseNetworks(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotS := make([]string, 0, len(got))
			for _, n := range got {
				gotS = append(gotS, n.String())
			}
			if strings.Join(gotS, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", gotS, tc.want)
			}
		})
	}
}

// A proxy of the environment (HTTPS_PROXY, ...) takes the requests it claims; NO_PROXY and
// an empty environment leave them to the egress proxy.
func TestRoute(t *testing.T) {
	p, err := Listen(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	corp := &httpproxy.Config{HTTPSProxy: "http://corp.example:3128", NoProxy: "internal.example"}
	tests := map[string]struct {
		env  *httpproxy.Config
		url  string
		want string
	}{
		"no proxy in the environment": {env: &httpproxy.Config{}, url: "https://registry.example/v2/", want: p.URL().String()},
		"the environment's proxy":     {env: corp, url: "https://registry.example/v2/", want: "http://corp.example:3128"},
		"NO_PROXY":                    {env: corp, url: "https://internal.example/v2/", want: p.URL().String()},
		"plain HTTP, no HTTP_PROXY":   {env: corp, url: "http://registry.example/v2/", want: p.URL().String()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Route(tc.env)(u)
			if err != nil || got.String() != tc.want {
				t.Errorf("Route(%s) = %v, %v; want %s", tc.url, got, err, tc.want)
			}
		})
	}
}

// An open connection reserves its bytes from the memory budget: with room for one, a second
// connection waits until the first closes, then goes through.
func TestProxyMemoryBudget(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int32
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			<-release // the first request holds its connection
		}
		_, _ = io.WriteString(w, "manifest")
	}))
	t.Cleanup(server.Close)
	var releaseOnce sync.Once
	releaseFirst := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseFirst) // before server.Close, which waits for the handler
	p, first := startProxy(t, Options{MaxBytesPerConnection: 64 << 10, MemoryBudget: 64 << 10}, server)
	second := &http.Client{Transport: first.Transport.(*http.Transport).Clone()}

	firstDone := make(chan error, 1)
	go func() { _, err := get(first, server.URL+"/a"); firstDone <- err }()
	waitUntil(t, "the first request at the registry", func() bool { return hits.Load() == 1 })
	secondDone := make(chan error, 1)
	go func() { _, err := get(second, server.URL+"/b"); secondDone <- err }()
	waitUntil(t, "the second connection waiting for the budget", func() bool { return testutil.ToFloat64(p.budgetWaits) == 1 })
	if n := hits.Load(); n != 1 {
		t.Fatalf("the registry got %d requests while the budget had room for one connection", n)
	}
	if got := p.reserved.Load(); got != 64<<10 {
		t.Errorf("reserved %d bytes, want one connection's %d", got, 64<<10)
	}
	releaseFirst()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	first.Transport.(*http.Transport).CloseIdleConnections() // the inspection ends: its tunnel closes
	if err := <-secondDone; err != nil {
		t.Fatalf("the waiting connection: %v", err)
	}
	second.Transport.(*http.Transport).CloseIdleConnections()
	waitUntil(t, "the budget given back", func() bool { return p.reserved.Load() == 0 })
}

// waitUntil polls cond until it holds, failing the test after a bound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll := func(context.Context) (bool, error) { return cond(), nil }
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, poll); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
