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

// Package egress is the one door through which the pod placement controller reaches
// registries: a forward proxy inside the controller's process, which containers/image uses for
// every registry request (types.SystemContext.DockerProxy) that no HTTPS_PROXY or HTTP_PROXY
// of the controller's environment claims. Image references are the tenants'
// to write, so every connection they make the controller open is checked here: its address
// must lie outside the blocked networks (the cloud's instance metadata, the controller's own
// loopback, whatever the admin adds), and no host may send more than a bounded number of bytes
// over one connection, which bounds the memory and CPU a registry's answer can take.
//
// Why a proxy: containers/image builds its own HTTP transport per image source and offers no
// dialer to hook, only a proxy function; the standard library's CONNECT tunnel and
// httputil.ReverseProxy do the protocol work, this package only the policy.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http/httpproxy"
	"golang.org/x/sync/semaphore"
)

// Marker starts the reason of every refusal, in the CONNECT status line and in the body of a
// refused plain-HTTP request: the standard library reports a refused CONNECT as an error made of
// the status text alone, so the inspector recognizes a refusal by this text.
const Marker = "refused by archgate's egress policy"

// DefaultMaxBytesPerConnection bounds what one registry connection may send: image manifests,
// indexes and configs are kilobytes (containers/image itself accepts up to 4 MiB each).
const DefaultMaxBytesPerConnection = 1 << 20

// DefaultMemoryBudget bounds the bytes all open registry connections may carry together: each
// connection reserves its whole MaxBytesPerConnection when it opens, so at most 128 are open
// at once with the defaults, and registries' answers in flight hold at most 128 MiB however
// many inspections run (the controller's memory limit is 512 MiB; containers/image parses a
// document into a few times its size). A connection over the budget waits, first come first
// served, until one closes or its inspection's deadline ends the wait.
const DefaultMemoryBudget = 128 << 20

// Refusal reasons, the "reason" label of MetricRefusals.
const (
	ReasonBlockedNetwork = "blocked-network"
	ReasonByteLimit      = "byte-limit"
	ReasonPlainHTTP      = "plain-http"
)

// Metric names of the proxy: connections refused or cut, by reason; connections that waited
// for the memory budget; bytes of the budget reserved now.
const (
	MetricRefusals      = "archgate_egress_refusals_total"
	MetricBudgetWaits   = "archgate_egress_budget_waits_total"
	MetricReservedBytes = "archgate_egress_reserved_bytes"
)

// Options configure a Proxy.
type Options struct {
	// BlockedNetworks are the addresses no registry connection may reach.
	BlockedNetworks []netip.Prefix
	// MaxBytesPerConnection is the most a host may send over one connection; past it the
	// connection is closed. DefaultMaxBytesPerConnection when zero.
	MaxBytesPerConnection int64
	// MemoryBudget bounds the bytes all open connections may carry together; each reserves
	// MaxBytesPerConnection while open. DefaultMemoryBudget when zero; at least one connection.
	MemoryBudget int64
	// PlainHTTP reports whether a plain-HTTP request may go to host (host[:port] as the
	// request names it): only to registries configured insecure, so that a TLS registry cannot
	// send the controller to a plain-HTTP auth realm or redirect it there. Nil forwards none.
	PlainHTTP func(host string) bool
	// DialTimeout bounds resolving and connecting; 10 s when zero.
	DialTimeout time.Duration
	// Resolver resolves host names; net.DefaultResolver when nil.
	Resolver *net.Resolver
}

// Proxy is the forward proxy. Create it with Listen, serve it with Start (a
// controller-runtime Runnable), point containers/image at URL.
type Proxy struct {
	opts     Options
	listener net.Listener
	server   *http.Server
	forward  *httputil.ReverseProxy
	refusals *prometheus.CounterVec
	// budget holds MemoryBudget bytes; an open connection holds MaxBytesPerConnection of them.
	budget      *semaphore.Weighted
	reserved    atomic.Int64
	budgetWaits prometheus.Counter
	reservedNow prometheus.GaugeFunc
}

// Listen opens the proxy's listener on a free loopback port; requests wait in its backlog until
// Start serves them.
func Listen(opts Options) (*Proxy, error) {
	if opts.MaxBytesPerConnection <= 0 {
		opts.MaxBytesPerConnection = DefaultMaxBytesPerConnection
	}
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = DefaultMemoryBudget
	}
	opts.MemoryBudget = max(opts.MemoryBudget, opts.MaxBytesPerConnection)
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{opts: opts, listener: l, refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRefusals,
		Help: "Registry connections the controller refused (blocked-network: the address is in spec.imageInspection.blockedNetworks; plain-http: plain HTTP to a host not configured insecure) or cut (byte-limit: the host sent more than a connection may carry).",
	}, []string{"reason"})}
	for _, r := range []string{ReasonBlockedNetwork, ReasonByteLimit, ReasonPlainHTTP} {
		p.refusals.WithLabelValues(r)
	}
	p.budget = semaphore.NewWeighted(opts.MemoryBudget)
	p.budgetWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricBudgetWaits,
		Help: "Registry connections that waited for the egress memory budget (every open connection reserves the bytes it may carry).",
	})
	p.reservedNow = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: MetricReservedBytes,
		Help: "Bytes of the egress memory budget the open registry connections reserve.",
	}, func() float64 { return float64(p.reserved.Load()) })
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL }, // absolute-form: the target itself
		// One connection per forwarded request (the inspector's own deadline bounds it): each
		// response is cut at the limit on its own.
		Transport: &http.Transport{DialContext: p.dial, DisableKeepAlives: true},
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = p.limit(resp.Body)
			return nil
		},
		ErrorHandler: p.refuseForward,
	}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	return p, nil
}

// URL is the proxy's address.
func (p *Proxy) URL() *url.URL { return &url.URL{Scheme: "http", Host: p.listener.Addr().String()} }

// Route returns the proxy of each registry request, for types.SystemContext.DockerProxy: the
// proxy env names for it (HTTPS_PROXY, HTTP_PROXY, NO_PROXY; the process's environment when
// nil), which then decides what the controller reaches, or else this one.
func (p *Proxy) Route(env *httpproxy.Config) func(*url.URL) (*url.URL, error) {
	if env == nil {
		env = httpproxy.FromEnvironment()
	}
	viaEnv, self := env.ProxyFunc(), p.URL()
	return func(u *url.URL) (*url.URL, error) {
		if proxy, err := viaEnv(u); err != nil || proxy != nil {
			return proxy, err
		}
		return self, nil
	}
}

// Collectors are the proxy's metrics.
func (p *Proxy) Collectors() []prometheus.Collector {
	return []prometheus.Collector{p.refusals, p.budgetWaits, p.reservedNow}
}

// Start serves until ctx ends.
func (p *Proxy) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		_ = p.server.Close() // hijacked tunnels close with their inspections
	}()
	if err := p.server.Serve(p.listener); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops a proxy that was never started (Start closes its own at the end).
func (p *Proxy) Close() error { return errors.Join(p.server.Close(), p.listener.Close()) }

// ServeHTTP tunnels CONNECT (TLS registries) and forwards absolute-form requests (plain-HTTP
// registries, configured insecure).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.tunnel(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && (p.opts.PlainHTTP == nil || !p.opts.PlainHTTP(r.URL.Host)):
		p.refusals.WithLabelValues(ReasonPlainHTTP).Inc()
		http.Error(w, fmt.Sprintf("%s: plain HTTP to %s, which is not a registry configured insecure (an auth realm or a redirect named it)",
			Marker, r.URL.Host), http.StatusForbidden)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		release, err := p.reserve(r.Context())
		if err != nil {
			return // the client gave up waiting
		}
		defer release()
		p.forward.ServeHTTP(w, r) // returns once the response is copied
	default:
		http.Error(w, "egress proxy: want CONNECT or an absolute http URL", http.StatusBadRequest)
	}
}

// tunnel connects the client to r.Host through the policy and copies both ways; the host's
// side is cut at MaxBytesPerConnection.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	release, err := p.reserve(r.Context())
	if err != nil {
		return // the client gave up waiting
	}
	defer release()
	upstream, err := p.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		p.refuseConnect(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	var once sync.Once
	closeBoth := func() { once.Do(func() { _ = client.Close(); _ = upstream.Close() }) }
	go func() {
		defer closeBoth()
		// Bytes the client sent after the CONNECT line (none in practice) come first.
		_, _ = io.Copy(upstream, io.MultiReader(io.LimitReader(buf, int64(buf.Reader.Buffered())), client))
	}()
	defer closeBoth()
	_, _ = io.Copy(client, p.limit(upstream))
}

// reserve takes a connection's share of the memory budget, waiting in line while it is spent;
// release gives it back. It fails only when ctx ends first.
func (p *Proxy) reserve(ctx context.Context) (release func(), err error) {
	n := p.opts.MaxBytesPerConnection
	if !p.budget.TryAcquire(n) {
		p.budgetWaits.Inc()
		if err := p.budget.Acquire(ctx, n); err != nil {
			return nil, err
		}
	}
	p.reserved.Add(n)
	return func() {
		p.reserved.Add(-n)
		p.budget.Release(n)
	}, nil
}

// limit cuts r after MaxBytesPerConnection bytes, counting the cut: a tunnel's whole download,
// or one forwarded response.
func (p *Proxy) limit(r io.ReadCloser) io.ReadCloser {
	return &limitedReader{r: r, left: p.opts.MaxBytesPerConnection, cut: func() { p.refusals.WithLabelValues(ReasonByteLimit).Inc() }}
}

type limitedReader struct {
	r    io.ReadCloser
	left int64
	cut  func()
}

// errByteLimit ends a connection that carried too much; the client sees the connection end
// early.
var errByteLimit = errors.New(Marker + ": the registry sent more than one connection may carry")

func (l *limitedReader) Read(b []byte) (int, error) {
	if l.left <= 0 {
		l.cut()
		return 0, errByteLimit
	}
	if int64(len(b)) > l.left {
		b = b[:l.left]
	}
	n, err := l.r.Read(b)
	l.left -= int64(n)
	return n, err
}

func (l *limitedReader) Close() error { return l.r.Close() }

// BlockedError is a connection the policy refused.
type BlockedError struct {
	Host    string
	Addr    netip.Addr
	Network netip.Prefix
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s: %s resolves to %s, in blocked network %s (spec.imageInspection.blockedNetworks)", Marker, e.Host, e.Addr, e.Network)
}

// dial resolves address and connects to the first of its addresses outside the blocked
// networks. The address dialed is the one checked: the name is resolved once, here.
func (p *Proxy) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	defer cancel()
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var blocked error
	var dialer net.Dialer
	for _, a := range addrs {
		if n, ok := p.blockedBy(a); ok {
			blocked = &BlockedError{Host: host, Addr: a, Network: n}
			continue
		}
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		blocked = err
	}
	if blocked == nil {
		blocked = fmt.Errorf("%s has no address", host)
	}
	return nil, blocked
}

func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	ips, err := p.opts.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return ips, nil
}

func (p *Proxy) blockedBy(a netip.Addr) (netip.Prefix, bool) {
	for _, n := range p.opts.BlockedNetworks {
		if n.Contains(a) {
			return n, true
		}
	}
	return netip.Prefix{}, false
}

// refuseConnect answers a CONNECT that could not be made. A blocked address is 403 with the
// reason as the status text (all the client will report); a failed dial is 502.
func (p *Proxy) refuseConnect(w http.ResponseWriter, err error) {
	var be *BlockedError
	if !errors.As(err, &be) {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.refusals.WithLabelValues(ReasonBlockedNetwork).Inc()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, be.Error(), http.StatusForbidden)
		return
	}
	conn, _, herr := hj.Hijack()
	if herr != nil {
		return
	}
	defer conn.Close()
	// The reason phrase is free text (RFC 9112); line breaks would end it.
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 403 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", strings.ReplaceAll(be.Error(), "\r\n", " "))
}

// refuseForward answers a plain-HTTP request that could not be forwarded.
func (p *Proxy) refuseForward(w http.ResponseWriter, _ *http.Request, err error) {
	var be *BlockedError
	if errors.As(err, &be) {
		p.refusals.WithLabelValues(ReasonBlockedNetwork).Inc()
		http.Error(w, be.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, err.Error(), http.StatusBadGateway)
}

// ParseNetworks parses CIDRs ("10.0.0.0/8", "fd00::/8"); the error names the first invalid one.
func ParseNetworks(cidrs []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		n, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("network %q: %w", c, err)
		}
		out = append(out, n.Masked())
	}
	return out, nil
}
