package inspect

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docker/distribution/registry/client/auth/challenge"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	lru "github.com/hashicorp/golang-lru/v2"
	"go.podman.io/image/v5/pkg/tlsclientconfig"
	"golang.org/x/sync/singleflight"

	"github.com/archgate/archgate/operator/internal/credentials"
)

// registryClient is the HTTP side of inspections. containers/image's docker transport builds a
// new HTTP client for every image source, so each image cost a new connection, TLS handshake
// and /v2/ ping, and it takes no transport of its own. Inspections therefore fetch with
// go-containerregistry over transports kept per registry host, and keep each host's /v2/
// challenge and each repository's bearer token (per credential) between inspections. What
// registries.conf decides (mirrors, blocked and insecure registries) is still read with
// containers/image (RegistryInspector.pullSources), and certs.d with its own reader.
type registryClient struct {
	opts    Options
	rootCAs *x509.CertPool // nil: the system roots

	hosts      *lru.Cache[hostKey, *http.Transport]
	challenges *lru.Cache[hostKey, cachedChallenge]
	tokens     *lru.Cache[tokenKey, cachedToken]
	pings      singleflight.Group
}

// Bounds of what the client keeps between inspections. A tenant can name any registry, so
// every table is bounded and least recently used entries go first.
const (
	// maxHostTransports bounds the registry hosts with a transport (and idle connections) kept;
	// with maxIdlePerHost, at most 64 idle connections stay open, each holding its share of
	// the egress proxy's memory budget.
	maxHostTransports = 32
	maxIdlePerHost    = 2
	// idleConnTimeout closes a connection unused that long.
	idleConnTimeout = 30 * time.Second
	// challengeTTL is how long a host's /v2/ answer (no auth, basic, or a token realm) is
	// trusted.
	challengeTTL    = 10 * time.Minute
	maxChallenges   = 256
	maxTokens       = 1024
	defaultTokenTTL = 60 * time.Second // the distribution spec's lifetime when expires_in is absent
	// maxResponseBytes bounds one registry answer (manifest, index, config, token), as
	// containers/image bounds manifests and configs.
	maxResponseBytes = 4 << 20
	// DefaultRetireConnectionAfter is Options.RetireConnectionAfter when zero: half the
	// egress proxy's default byte limit of a connection.
	DefaultRetireConnectionAfter = 512 << 10
)

// hostKey names a registry host as one inspection reaches it.
type hostKey struct {
	host     string // host[:port]
	insecure bool   // TLS verification off and plain HTTP allowed
	certs    string // what certs.d holds for the host (see certsFingerprint)
}

type cachedChallenge struct {
	challenge *transport.Challenge
	expires   time.Time
}

// tokenKey names a bearer token: one per host, repository and credential. The credential is
// kept as a digest of its secret parts, so a token is only ever reused with the credential it
// was issued for, never for another tenant's.
type tokenKey struct {
	host       hostKey
	repository string
	credential [sha256.Size]byte
}

type cachedToken struct {
	rt      http.RoundTripper
	expires time.Time
}

func newRegistryClient(opts Options, rootCAs *x509.CertPool) *registryClient {
	hosts, _ := lru.NewWithEvict(maxHostTransports, func(_ hostKey, t *http.Transport) { t.CloseIdleConnections() })
	challenges, _ := lru.New[hostKey, cachedChallenge](maxChallenges)
	tokens, _ := lru.New[tokenKey, cachedToken](maxTokens)
	if opts.RetireConnectionAfter == 0 {
		opts.RetireConnectionAfter = DefaultRetireConnectionAfter
	}
	return &registryClient{opts: opts, rootCAs: rootCAs, hosts: hosts, challenges: challenges, tokens: tokens}
}

// repository returns the transport that reaches repo on host with auth: the host's kept
// connections, its /v2/ challenge (pinged once) and, for a token registry, a token for repo
// and this credential (exchanged once until it expires). Call forget when the registry refuses
// the transport: the token is then exchanged afresh next time (for this credential only, so
// one tenant's refusals never cost another's tokens).
func (c *registryClient) repository(ctx context.Context, host, repo string, insecure bool, auth credentials.AuthConfig) (
	repository name.Repository, rt http.RoundTripper, forget func(), err error) {
	forget = func() {}
	key := hostKey{host: host, insecure: insecure, certs: certsFingerprint(c.certDir(host))}
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	if repository, err = name.NewRepository(host+"/"+repo, nameOpts...); err != nil {
		return name.Repository{}, nil, forget, err
	}
	base, err := c.transport(key)
	if err != nil {
		return name.Repository{}, nil, forget, err
	}
	ch, err := c.challenge(ctx, key, base)
	if err != nil {
		return name.Repository{}, nil, forget, err
	}
	scheme := "https"
	if ch.Insecure {
		scheme = "http"
	}
	base = &schemeTransport{host: host, scheme: scheme, inner: base}
	authenticator := authn.FromConfig(authn.AuthConfig{Username: auth.Username, Password: auth.Password,
		IdentityToken: auth.IdentityToken, RegistryToken: auth.RegistryToken})
	if !strings.EqualFold(ch.Scheme, "bearer") {
		rt, err = transport.FromToken(repository.Registry, authenticator, base, ch, &transport.Token{})
		return repository, rt, forget, err
	}
	tk := tokenKey{host: key, repository: repo, credential: credentialDigest(auth)}
	forget = func() { c.tokens.Remove(tk) }
	if t, ok := c.tokens.Get(tk); ok && time.Now().Before(t.expires) {
		return repository, t.rt, forget, nil
	}
	tok := &transport.Token{Token: auth.RegistryToken}
	if tok.Token == "" {
		if tok, err = transport.Exchange(ctx, repository.Registry, authenticator, base,
			[]string{repository.Scope(transport.PullScope)}, ch); err != nil {
			return name.Repository{}, nil, forget, err
		}
		tok.Token = cmp.Or(tok.Token, tok.AccessToken)
	}
	if rt, err = transport.FromToken(repository.Registry, authenticator, base, ch, tok); err != nil {
		return name.Repository{}, nil, forget, err
	}
	ttl := defaultTokenTTL
	if tok.ExpiresIn > 0 {
		ttl = time.Duration(tok.ExpiresIn) * time.Second
	}
	// Expire a little early, so a token is not sent in its last seconds.
	c.tokens.Add(tk, cachedToken{rt: rt, expires: time.Now().Add(ttl * 9 / 10)})
	return repository, rt, forget, nil
}

// transport returns the kept transport of a host, built on first use with the host's TLS
// configuration: the CA bundle, certs.d's CAs and client certificates, verification off for an
// insecure registry.
func (c *registryClient) transport(key hostKey) (http.RoundTripper, error) {
	if t, ok := c.hosts.Get(key); ok {
		return c.wrap(t), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.rootCAs != nil {
		cfg.RootCAs = c.rootCAs.Clone() // certs.d CAs are appended: never to the shared pool
	}
	if dir := c.certDir(key.host); dir != "" {
		if err := tlsclientconfig.SetupCertificates(dir, cfg); err != nil {
			return nil, fmt.Errorf("certificates of %s in %s: %w", key.host, dir, err)
		}
	}
	cfg.InsecureSkipVerify = key.insecure
	proxy := http.ProxyFromEnvironment
	if route := c.opts.Proxy; route != nil {
		proxy = func(req *http.Request) (*url.URL, error) { return route(req.URL) }
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy: proxy,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: conn}, nil
		},
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: maxIdlePerHost,
		IdleConnTimeout:     idleConnTimeout,
	}
	c.hosts.Add(key, t)
	return c.wrap(t), nil
}

func (c *registryClient) wrap(t *http.Transport) http.RoundTripper {
	return &clientTransport{inner: t, userAgent: c.opts.UserAgent, retireAfter: c.opts.RetireConnectionAfter}
}

// certDir is the certs.d directory of host, "" when there is none: CertsDir's, or without it
// the first of the system's that exists, as containers/image looks them up.
func (c *registryClient) certDir(host string) string {
	if c.opts.CertsDir != "" {
		return filepath.Join(c.opts.CertsDir, host)
	}
	for _, base := range []string{"/etc/containers/certs.d", "/etc/docker/certs.d"} {
		if fi, err := os.Stat(filepath.Join(base, host)); err == nil && fi.IsDir() {
			return filepath.Join(base, host)
		}
	}
	return ""
}

// certsFingerprint names what a certs.d directory holds (each file's name, size and change
// time), so that a transport is rebuilt when its certificates change.
func certsFingerprint(dir string) string {
	if dir == "" {
		return ""
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d;", e.Name(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// challenge returns the host's /v2/ answer, pinging it once for all concurrent inspections.
// The ping runs on its own deadline, so one caller giving up does not fail the others.
func (c *registryClient) challenge(ctx context.Context, key hostKey, rt http.RoundTripper) (*transport.Challenge, error) {
	if ch, ok := c.challenges.Get(key); ok && time.Now().Before(ch.expires) {
		return ch.challenge, nil
	}
	flight := fmt.Sprintf("%s|%t|%s", key.host, key.insecure, key.certs)
	done := c.pings.DoChan(flight, func() (any, error) {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
		defer cancel()
		ch, err := ping(pctx, rt, key.host, key.insecure)
		if err == nil {
			c.challenges.Add(key, cachedChallenge{challenge: ch, expires: time.Now().Add(challengeTTL)})
		}
		return ch, err
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-done:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*transport.Challenge), nil
	}
}

// ping asks host for its /v2/ challenge over HTTPS and, for an insecure registry only, plain
// HTTP after HTTPS failed, as containers/image does. go-containerregistry's own ping also
// tries plain HTTP for any private or loopback address, which archgate allows only for
// registries marked insecure.
func ping(ctx context.Context, rt http.RoundTripper, host string, insecure bool) (*transport.Challenge, error) {
	schemes := []string{"https"}
	if insecure {
		schemes = append(schemes, "http")
	}
	var errs []error
	for _, scheme := range schemes {
		ch, err := pingScheme(ctx, rt, host, scheme)
		if err == nil {
			return ch, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func pingScheme(ctx context.Context, rt http.RoundTripper, host, scheme string) (*transport.Challenge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+host+"/v2/", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body) // drained, so the connection is kept
		_ = resp.Body.Close()
	}()
	ch := &transport.Challenge{Insecure: resp.Request.URL.Scheme == "http"}
	switch resp.StatusCode {
	case http.StatusOK:
		return ch, nil
	case http.StatusUnauthorized:
		challenges := challenge.ResponseChallenges(resp)
		if len(challenges) == 0 {
			ch.Scheme = resp.Header.Get("WWW-Authenticate")
			return ch, nil
		}
		chosen := challenges[0]
		for _, c := range challenges {
			if c.Scheme == "bearer" {
				chosen = c // the scheme go-containerregistry prefers when both are offered
				break
			}
		}
		ch.Scheme, ch.Parameters = chosen.Scheme, chosen.Parameters
		return ch, nil
	default:
		return nil, transport.CheckError(resp, http.StatusOK, http.StatusUnauthorized)
	}
}

// credentialDigest identifies a credential by its secret parts, without keeping them.
func credentialDigest(a credentials.AuthConfig) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join([]string{a.Username, a.Password, a.IdentityToken, a.RegistryToken}, "\x00")))
}

// schemeTransport sends the requests for host with the scheme its ping found: go-containerregistry
// writes plain-HTTP URLs for insecure and private-address registries.
type schemeTransport struct {
	host, scheme string
	inner        http.RoundTripper
}

func (t *schemeTransport) RoundTrip(in *http.Request) (*http.Response, error) {
	if in.URL.Host != t.host || in.URL.Scheme == t.scheme {
		return t.inner.RoundTrip(in)
	}
	out := in.Clone(in.Context())
	out.URL.Scheme = t.scheme
	return t.inner.RoundTrip(out)
}

// clientTransport sets the user agent, bounds every answer at maxResponseBytes, and retires a
// connection once it has carried retireAfter bytes: the controller's egress proxy cuts a
// connection at a byte limit, and a kept connection would reach it over many inspections.
type clientTransport struct {
	inner       http.RoundTripper
	userAgent   string
	retireAfter int64
}

func (t *clientTransport) RoundTrip(in *http.Request) (*http.Response, error) {
	var conn atomic.Pointer[countingConn]
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { conn.Store(countingOf(info.Conn)) }}
	out := in.Clone(httptrace.WithClientTrace(in.Context(), trace))
	out.Header.Set("User-Agent", t.userAgent)
	resp, err := t.inner.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxResponseBytes, closed: func() {
		if c := conn.Load(); c != nil && t.retireAfter > 0 && c.read.Load() > t.retireAfter {
			_ = c.Close() // the transport drops it from its idle connections
		}
	}}
	return resp, nil
}

// countingConn counts the bytes a registry sent over a connection.
type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// countingOf finds the countingConn under a connection the transport handed out (TLS wraps it).
func countingOf(c net.Conn) *countingConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, _ := c.(*countingConn)
	return cc
}

// errResponseTooLarge ends the read of an answer past maxResponseBytes.
var errResponseTooLarge = fmt.Errorf("registry answer larger than %d MiB", maxResponseBytes>>20)

type boundedBody struct {
	io.ReadCloser
	left   int64
	closed func()
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more tells a body of exactly the limit from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errResponseTooLarge
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.ReadCloser.Close()
	b.closed()
	return err
}
