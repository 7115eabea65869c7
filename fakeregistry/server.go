package fakeregistry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options configures a registry. The zero value serves an empty catalog over plain HTTP on a free
// loopback port without auth or faults.
type Options struct {
	// Catalog is the content to serve; nil serves an empty registry.
	Catalog *Catalog
	// Addr is the listen address; default 127.0.0.1:0 (a free port).
	Addr string
	// TLS serves HTTPS with a CA generated at start; otherwise plain HTTP.
	TLS bool
	// TLSHostname is the DNS name the serving certificate covers besides localhost, 127.0.0.1 and ::1;
	// default DefaultTLSHostname.
	TLSHostname string
	// Auth configures authentication; the zero value allows everything.
	Auth Auth
	// Faults are the faults injected from the start; change them later with SetFaults.
	Faults Faults
	// Seed seeds the fault generator.
	Seed uint64
	// Logger receives the registry's own logs; default discards.
	Logger *slog.Logger
	// Writable accepts pushes (blob uploads, manifest PUTs) and deletions (manifests, tags, blobs)
	// within the auth rules; by default the registry is read-only and writes are 405 UNSUPPORTED.
	Writable bool
	// NoDelete makes a writable registry refuse DELETE of manifests, tags and blobs with 405
	// UNSUPPORTED, as registries with deletion disabled do; uploads can still be cancelled.
	// Registry.DeleteImage works either way.
	NoDelete bool
}

// Registry is a running fake registry. Its methods are safe for concurrent use.
type Registry struct {
	catalog   *Catalog
	store     *store
	ln        net.Listener
	srv       *http.Server
	tls       *tlsMaterial
	hostname  string
	counters  *Counters
	faults    *faultInjector
	log       *slog.Logger
	done      chan struct{}
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
	// mu guards closing; inflight counts requests admitted before closing.
	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup
}

// Start loads the catalog into a go-containerregistry registry and serves it behind counters, faults and
// auth (in that order). The registry stops when ctx is done or Close is called.
func Start(ctx context.Context, opts Options) (*Registry, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.TLSHostname == "" {
		opts.TLSHostname = DefaultTLSHostname
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Catalog == nil {
		empty, err := NewCatalog(CatalogSpec{})
		if err != nil {
			return nil, fmt.Errorf("building empty catalog: %w", err)
		}
		opts.Catalog = empty
	}
	r := &Registry{
		catalog:   opts.Catalog,
		hostname:  opts.TLSHostname,
		counters:  NewCounters(),
		log:       opts.Logger,
		done:      make(chan struct{}),
		serveDone: make(chan struct{}),
	}
	var err error
	if r.faults, err = newFaultInjector(opts.Faults, opts.Seed, r.counters, r.done); err != nil {
		return nil, err
	}
	auth, err := newAuthenticator(opts.Auth)
	if err != nil {
		return nil, err
	}
	st := newStore()
	if err := opts.Catalog.content.loadInto(st); err != nil {
		return nil, err
	}
	r.store = st
	inner := jsonErrors(newAPI(st, opts.Catalog.negotiation, opts))
	if opts.TLS {
		if r.tls, err = newTLSMaterial(opts.TLSHostname); err != nil {
			return nil, err
		}
	}
	handler := r.track(withInfo(r.counters.wrap(r.faults.wrap(auth.wrap(inner)))))
	r.ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", opts.Addr, err)
	}
	r.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	if r.tls != nil {
		r.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{r.tls.server}, MinVersion: tls.VersionTLS12}
	}
	go r.serve()
	// A goroutine rather than context.AfterFunc: with ctx already cancelled AfterFunc would run
	// Close before Start has stored what Close reads.
	go func() {
		select {
		case <-ctx.Done():
			_ = r.Close()
		case <-r.done:
		}
	}()
	r.log.Info("fake registry started", "host", r.Host(), "tls", r.tls != nil, "authMode", string(opts.Auth.Mode),
		"images", len(opts.Catalog.images))
	return r, nil
}

// serve runs the HTTP server until Close.
func (r *Registry) serve() {
	defer close(r.serveDone)
	var err error
	if r.tls != nil {
		err = r.srv.ServeTLS(r.ln, "", "")
	} else {
		err = r.srv.Serve(r.ln)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		r.log.Error("fake registry stopped serving", "err", err)
	}
}

// Close stops the registry: it refuses new requests, aborts held and delayed ones, closes every
// connection and waits for running handlers to return. It is safe to call more than once.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closing = true
		r.mu.Unlock()
		close(r.done)
		if err := r.srv.Close(); err != nil {
			r.closeErr = fmt.Errorf("closing registry: %w", err)
		}
		<-r.serveDone
		r.inflight.Wait()
		r.log.Info("fake registry stopped", "host", r.Host())
	})
	return r.closeErr
}

// track admits requests while the registry is open and counts them in flight for Close.
func (r *Registry) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		if r.closing {
			r.mu.Unlock()
			panic(http.ErrAbortHandler)
		}
		r.inflight.Add(1)
		r.mu.Unlock()
		defer r.inflight.Done()
		next.ServeHTTP(w, req)
	})
}

// Addr returns the listener address, host:port.
func (r *Registry) Addr() string {
	return r.ln.Addr().String()
}

// Host returns host:port for image references; an unspecified listen address becomes 127.0.0.1.
func (r *Registry) Host() string {
	host, port, err := net.SplitHostPort(r.Addr())
	if err != nil {
		return r.Addr()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// TLSHost returns TLSHostname:port, the certificate's own name for clients that can resolve it.
func (r *Registry) TLSHost() string {
	_, port, err := net.SplitHostPort(r.Addr())
	if err != nil {
		return r.hostname
	}
	return net.JoinHostPort(r.hostname, port)
}

// TLS reports whether the registry serves HTTPS.
func (r *Registry) TLS() bool {
	return r.tls != nil
}

// URL returns the registry's base URL, e.g. https://127.0.0.1:41234.
func (r *Registry) URL() string {
	if r.tls != nil {
		return "https://" + r.Host()
	}
	return "http://" + r.Host()
}

// Reference returns Host()/repository:tag, or Host()/repository@digest for a digest.
func (r *Registry) Reference(repository, tagOrDigest string) string {
	if isDigest(tagOrDigest) {
		return r.Host() + "/" + repository + "@" + tagOrDigest
	}
	return r.Host() + "/" + repository + ":" + tagOrDigest
}

// CACertPEM returns the PEM of the CA that signed the serving certificate; nil for plain HTTP.
func (r *Registry) CACertPEM() []byte {
	if r.tls == nil {
		return nil
	}
	return bytes.Clone(r.tls.caPEM)
}

// CertPool returns a pool holding the registry's CA, for Go HTTP clients (ggcr's remote); nil for plain
// HTTP.
func (r *Registry) CertPool() *x509.CertPool {
	if r.tls == nil {
		return nil
	}
	return r.tls.pool.Clone()
}

// WriteCertsDir writes the CA as ca.crt into root/<host:port>/ for Host(), localhost:port and TLSHost(),
// the docker certs.d layout, and returns root/<Host()>. Pass root as containers/image's
// SystemContext.DockerPerHostCertDirPath, or the returned directory as SystemContext.DockerCertPath
// (which names the directory holding ca.crt itself, not a certs.d root).
func (r *Registry) WriteCertsDir(root string) (string, error) {
	if r.tls == nil {
		return "", errors.New("registry serves plain HTTP: no CA to write")
	}
	_, port, err := net.SplitHostPort(r.Addr())
	if err != nil {
		return "", fmt.Errorf("parsing listen address: %w", err)
	}
	return writeCertsDirs(root, r.tls.caPEM, []string{r.Host(), net.JoinHostPort("localhost", port), r.TLSHost()})
}

// Counters returns the registry's request counters.
func (r *Registry) Counters() *Counters {
	return r.counters
}

// SetFaults validates and installs new faults; requests already delayed or held keep their fate.
func (r *Registry) SetFaults(f Faults) error {
	return r.faults.set(f)
}

// Faults returns a copy of the current faults.
func (r *Registry) Faults() Faults {
	return r.faults.get()
}

// ErrManifestUnknown is returned for a tag or digest that names no manifest of the repository.
var ErrManifestUnknown = errors.New("manifest not in registry")

// DeleteImage deletes the manifest a tag or digest names in repository, with every tag naming it,
// as a client's DELETE by digest does but whatever Writable and NoDelete say: from then on pulls by
// that digest or those tags are 404 MANIFEST_UNKNOWN. The manifests an index lists and the blobs
// stay, as in a registry before garbage collection, and the catalog (with its ground truth) is
// unchanged. It returns an error wrapping ErrManifestUnknown when there is no such manifest.
func (r *Registry) DeleteImage(repository, tagOrDigest string) error {
	if _, found := r.store.deleteManifest(repository, tagOrDigest); !found {
		return fmt.Errorf("deleting %s from %s: %w", tagOrDigest, repository, ErrManifestUnknown)
	}
	return nil
}

// Catalog returns the catalog the registry serves.
func (r *Registry) Catalog() *Catalog {
	return r.catalog
}

// infoKey is the context key of a request's requestInfo.
type infoKey struct{}

// withInfo classifies each request once and stores the result in its context for the inner layers.
func withInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), infoKey{}, classify(r))))
	})
}

// infoFrom returns the requestInfo withInfo stored.
func infoFrom(ctx context.Context) requestInfo {
	info, ok := ctx.Value(infoKey{}).(requestInfo)
	if !ok {
		return requestInfo{kind: KindOther}
	}
	return info
}
