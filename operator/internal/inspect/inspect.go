// Package inspect finds the CPU architectures an image supports by reading its manifest (and,
// for single-image manifests, its config) from the registry, and caches the answers per image
// and credential. Registries.conf, certs.d, auth files and manifests are read with
// go.podman.io/image/v5; the registry is reached with go-containerregistry over kept
// connections.
package inspect

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	digest "github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/manifest"
	dockerconfig "go.podman.io/image/v5/pkg/docker/config"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"

	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/internal/placement"
)

// Inspector reports the linux architectures an image supports.
type Inspector interface {
	// Architectures inspects imageRef, trying creds in order (none means anonymous).
	Architectures(ctx context.Context, imageRef string, creds credentials.Candidates) (Result, error)
}

// InspectorFunc adapts a function to Inspector.
type InspectorFunc func(ctx context.Context, imageRef string, creds credentials.Candidates) (Result, error)

// Architectures calls f.
func (f InspectorFunc) Architectures(ctx context.Context, imageRef string, creds credentials.Candidates) (Result, error) {
	return f(ctx, imageRef, creds)
}

var (
	_ Inspector = InspectorFunc(nil)
	_ Inspector = (*RegistryInspector)(nil)
	_ Inspector = (*CachingInspector)(nil)
)

// Result is what an inspection found.
type Result struct {
	// Architectures is the sorted set of kubernetes.io/arch values the image runs on. It is
	// empty for an image with no linux entry (windows-only, say).
	Architectures []string
	// Platforms is the sorted set of "os/arch" pairs of every operating system the image runs
	// on (windows/amd64 as well as linux/amd64), for placement that constrains kubernetes.io/os.
	Platforms []string
	// AnyArchitecture is set for images that carry no binaries (OLM bundles): they run
	// anywhere, and Architectures is then empty.
	AnyArchitecture bool
	// Digest is the digest of the manifest (list) that was read; MediaType its media type.
	Digest    string
	MediaType string
	// Identity is the identity of the credential the registry accepted
	// (credentials.Anonymous when none was sent).
	Identity credentials.Identity
}

// Supports reports whether the image runs on arch (a kubernetes.io/arch value).
func (r Result) Supports(arch string) bool {
	return r.AnyArchitecture || slices.Contains(r.Architectures, arch)
}

// Placement returns what placement needs of r.
func (r Result) Placement() placement.ImageArchitectures {
	return placement.ImageArchitectures{Architectures: r.Architectures, Platforms: r.Platforms, AnyArchitecture: r.AnyArchitecture}
}

// clone returns a copy that shares no memory with r, so cached results stay unchanged
// whatever callers do with theirs.
func (r Result) clone() Result {
	r.Architectures = slices.Clone(r.Architectures)
	if r.Architectures == nil {
		r.Architectures = []string{}
	}
	r.Platforms = slices.Clone(r.Platforms)
	return r
}

// DefaultTimeout bounds one image's inspection, all credential candidates included, when
// Options.Timeout is zero. Podman's client has no header timeout of its own.
const DefaultTimeout = 30 * time.Second

// DefaultUserAgent is sent to registries when Options.UserAgent is empty.
const DefaultUserAgent = "archgate"

// Options configure a RegistryInspector. Every path is optional; an empty one leaves podman's
// default (which reads /etc/containers/… and $HOME), so deployments set them explicitly.
type Options struct {
	// RegistriesConfPath is a registries.conf (mirrors, blocked and insecure registries).
	// Podman caches a parsed file per path: call ReloadRegistriesConf after changing it.
	RegistriesConfPath string
	// RegistriesConfDirPath is a registries.conf.d drop-in directory. When only
	// RegistriesConfPath is set, podman still reads its default drop-in directories.
	RegistriesConfDirPath string
	// RegistriesDirPath is a registries.d directory (lookaside signature configuration).
	RegistriesDirPath string
	// CertsDir is a certs.d-style directory: a host[:port] subdirectory per registry with
	// CA certificates (*.crt) and client certificate/key pairs (*.cert, *.key).
	CertsDir string
	// CABundleFile is a PEM file of CA certificates trusted for every registry, on top of
	// the system roots (the caBundleConfigmapRef content).
	CABundleFile string
	// AuthFilePath is a Docker/podman auth file. It is consulted only where the per-call
	// credential is not used: podman never sends a credential to a mirror on another host,
	// and reads this file for the mirror instead.
	AuthFilePath string
	// InsecureSkipTLSVerify disables TLS verification and allows plain HTTP for every
	// registry. For development only: prefer `insecure = true` per registry in registries.conf.
	InsecureSkipTLSVerify bool
	// Timeout bounds one image's inspection; DefaultTimeout when zero.
	Timeout time.Duration
	// BreakerFailures is how many inspections of a registry host in a row must time out
	// before its circuit opens; DefaultBreakerFailures when zero,
	// no circuit breaking when negative.
	BreakerFailures int
	// BreakerOpenFor is how long an open circuit fails its host's inspections at once;
	// DefaultBreakerOpenFor when zero.
	BreakerOpenFor time.Duration
	// AllowedRegistries, when not empty, are the only registries inspected (see
	// RegistryAllowed); an image of another fails at once with ReasonBlocked.
	AllowedRegistries []string
	// MaxInspectionsPerRegistry bounds the inspections in flight against one registry (its
	// registrable domain; an IP literal's address and port); DefaultMaxInspectionsPerRegistry
	// when zero, no limit when negative. An inspection over it fails at once with
	// ReasonRegistryBusy.
	MaxInspectionsPerRegistry int
	// Proxy returns the proxy of each registry request (the controller's egress proxy, which
	// enforces its network policy, see egress.Proxy.Route); the environment's
	// (HTTPS_PROXY, ...) when nil.
	Proxy func(*url.URL) (*url.URL, error)
	// RetireConnectionAfter closes a kept registry connection once it has carried that many
	// bytes, below the egress proxy's per-connection limit; DefaultRetireConnectionAfter
	// when zero, never when negative.
	RetireConnectionAfter int64
	// UserAgent is sent to registries; DefaultUserAgent when empty.
	UserAgent string
	// Metrics receives inspection durations and errors; unregistered metrics when nil.
	Metrics *Metrics
}

// RegistryInspector inspects images in their registries. It keeps connections, each host's
// /v2/ challenge and bearer tokens between calls (see registryClient), and is safe for
// concurrent use.
type RegistryInspector struct {
	opts     Options
	client   *registryClient
	metrics  *Metrics
	breakers *hostBreakers  // nil without circuit breaking
	slots    *registrySlots // nil without a limit per registry
}

// NewRegistryInspector checks the configured paths and loads the CA bundle.
func NewRegistryInspector(opts Options) (*RegistryInspector, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.BreakerFailures == 0 {
		opts.BreakerFailures = DefaultBreakerFailures
	}
	if opts.BreakerOpenFor <= 0 {
		opts.BreakerOpenFor = DefaultBreakerOpenFor
	}
	if opts.MaxInspectionsPerRegistry == 0 {
		opts.MaxInspectionsPerRegistry = DefaultMaxInspectionsPerRegistry
	}
	for _, p := range []struct {
		name, path string
		dir        bool
	}{
		{"registries.conf", opts.RegistriesConfPath, false},
		{"registries.conf.d", opts.RegistriesConfDirPath, true},
		{"registries.d", opts.RegistriesDirPath, true},
		{"certs.d", opts.CertsDir, true},
		{"auth file", opts.AuthFilePath, false},
	} {
		if p.path == "" {
			continue
		}
		fi, err := os.Stat(p.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if fi.IsDir() != p.dir {
			return nil, fmt.Errorf("%s %s: want a directory = %v", p.name, p.path, p.dir)
		}
	}
	r := &RegistryInspector{opts: opts, metrics: opts.Metrics,
		breakers: newHostBreakers(opts.BreakerFailures, opts.BreakerOpenFor, opts.Metrics),
		slots:    newRegistrySlots(opts.MaxInspectionsPerRegistry)}
	var rootCAs *x509.CertPool // nil: the system roots
	if opts.CABundleFile != "" {
		pem, err := os.ReadFile(opts.CABundleFile)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s: no PEM certificate found", opts.CABundleFile)
		}
		rootCAs = pool
	}
	if rootCAs == nil {
		// crypto/x509 reads the system trust roots once, on first use: most of the first
		// inspection after a start (27–29 ms against 5 ms) unless read here, at start-up.
		_, _ = x509.SystemCertPool()
	}
	r.client = newRegistryClient(opts, rootCAs)
	return r, nil
}

// checkBlocked returns an error when registries.conf blocks the image's registry and gives it
// no mirror to pull this reference from instead: no mirror at all, or only mirrors restricted
// to the other kind of pull (an ImageDigestMirrorSet's digest-only mirrors for a tag), as CRI-O
// would fail the pull. With a mirror that applies, podman tries it and reports the blocked
// primary only when it fails. A registries.conf podman cannot load is left to podman, which
// fails the inspection with its own error.
func (r *RegistryInspector) checkBlocked(named reference.Named) error {
	reg, err := sysregistriesv2.FindRegistry(r.opts.registriesConfContext(), named.Name())
	if err != nil || reg == nil || !reg.Blocked {
		return nil
	}
	// The primary is always the last pull source: more than one means a mirror applies.
	if sources, err := reg.PullSourcesFromReference(named); err != nil || len(sources) > 1 {
		return nil
	}
	source := r.opts.RegistriesConfPath
	if source == "" {
		source = "registries.conf"
	}
	if r.opts.RegistriesConfDirPath != "" {
		source += " or " + r.opts.RegistriesConfDirPath
	}
	why := "the image cannot be pulled from it"
	if len(reg.Mirrors) > 0 {
		why = "none of its mirrors serves this reference (pull-from-mirror)"
	}
	return fmt.Errorf("registry %s is blocked in %s: %s", reg.Prefix, source, why)
}

// ReloadRegistriesConf makes the next inspections re-read registries.conf and its drop-ins.
// Podman caches parsed registries configuration for the whole process, keyed by path.
func ReloadRegistriesConf() { sysregistriesv2.InvalidateCache() }

// Architectures inspects imageRef in its registry. Candidates are tried in order within one
// deadline (Options.Timeout, or the caller's if sooner); the next one is tried only after an
// auth (401/403) or not-found (404) answer, see tryNextCredential. With no candidates the
// request is anonymous: ambient credential files are not consulted for the image's own
// registry. The returned Result names the accepted credential's identity.
func (r *RegistryInspector) Architectures(ctx context.Context, imageRef string, creds credentials.Candidates) (Result, error) {
	start := time.Now()
	res, err := r.inspect(ctx, imageRef, creds)
	reason := Reason("")
	if err != nil {
		reason = ReasonOf(err)
	}
	r.metrics.observeInspection(time.Since(start).Seconds(), reason)
	return res, err
}

func (r *RegistryInspector) inspect(ctx context.Context, imageRef string, creds credentials.Candidates) (Result, error) {
	named, err := ParseReference(imageRef)
	if err != nil {
		return Result{}, &Error{Image: imageRef, Reason: ReasonInvalidReference, Err: err}
	}
	if _, err := docker.NewReference(named); err != nil { // refuses what it cannot pull (a tag and a digest)
		return Result{}, &Error{Image: imageRef, Reason: ReasonInvalidReference, Err: err}
	}
	domain := reference.Domain(named)
	if !RegistryAllowed(r.opts.AllowedRegistries, domain) {
		return Result{}, &Error{Image: imageRef, Reason: ReasonBlocked, Err: fmt.Errorf(
			"registry %s is not one of the allowed registries (spec.imageInspection.allowedRegistries)", domain)}
	}
	if err := r.checkBlocked(named); err != nil {
		return Result{}, &Error{Image: imageRef, Reason: ReasonBlocked, Err: err}
	}
	// Where to read the image from is the same for every credential: looked up once.
	sources, err := r.pullSources(named)
	if err != nil {
		return Result{}, &Error{Image: imageRef, Reason: ReasonOther, Err: err}
	}
	return r.breakers.do(ctx, domain, imageRef, func() (Result, error) {
		release, err := r.slots.acquire(domain, tenantOf(ctx), imageRef)
		if err != nil {
			return Result{}, err
		}
		defer release()
		return r.tryCredentials(ctx, imageRef, named, sources, creds)
	})
}

// tryCredentials inspects named from sources with each candidate credential in turn, within
// Options.Timeout.
func (r *RegistryInspector) tryCredentials(ctx context.Context, imageRef string, named reference.Named,
	sources []pullSource, creds credentials.Candidates) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()

	attempts := creds
	if len(attempts) == 0 {
		attempts = credentials.Candidates{{}} // the zero credential: anonymous
	}
	var errs []error
	reason := ReasonOther
	for i, cred := range attempts {
		id := credentials.Anonymous
		if len(creds) > 0 {
			id = cred.Identity()
		}
		res, err := r.inspectWith(ctx, named, sources, cred.Auth)
		if err == nil {
			res.Identity = id
			return res, nil
		}
		reason = classify(err)
		if len(creds) > 0 {
			err = fmt.Errorf("credential %d of %d (%s): %w", i+1, len(creds), describe(cred), err)
		}
		errs = append(errs, err)
		if !tryNextCredential(reason) || ctx.Err() != nil {
			break
		}
	}
	return Result{}, &Error{Image: imageRef, Reason: reason, Err: errors.Join(errs...)}
}

// pullSource is one place an image is read from: a mirror registries.conf gives it, or its own
// registry.
type pullSource struct {
	ref      reference.Named
	insecure bool  // TLS verification off, plain HTTP allowed
	err      error // why this source cannot be tried (a blocked registry)
}

// pullSources lists where named is read from, in order: registries.conf's mirrors that apply to
// it, then its own registry, as containers/image pulls it. The registry's own entry is an
// error when registries.conf blocks it (checkBlocked has made sure a mirror is left).
func (r *RegistryInspector) pullSources(named reference.Named) ([]pullSource, error) {
	sys := r.opts.registriesConfContext()
	reg, err := sysregistriesv2.FindRegistry(sys, named.Name())
	if err != nil {
		return nil, err
	}
	if reg == nil {
		return []pullSource{{ref: named, insecure: r.opts.InsecureSkipTLSVerify}}, nil
	}
	sources, err := reg.PullSourcesFromReference(named)
	if err != nil {
		return nil, err
	}
	out := make([]pullSource, 0, len(sources))
	for i, s := range sources {
		src := pullSource{ref: s.Reference, insecure: s.Endpoint.Insecure || r.opts.InsecureSkipTLSVerify}
		host := reference.Domain(s.Reference)
		if i == len(sources)-1 && reg.Blocked {
			src.err = fmt.Errorf("registry %s is blocked in registries.conf", reg.Prefix)
		} else if m, err := sysregistriesv2.FindRegistry(sys, host); err == nil && m != nil && m.Blocked && i < len(sources)-1 {
			src.err = fmt.Errorf("mirror %s is blocked in registries.conf", host)
		}
		out = append(out, src)
	}
	return out, nil
}

// inspectWith reads named with one credential from each of sources in turn, until one
// answers. When all fail, the error is the image's own registry's (the last source), with the
// mirrors' errors in its text, as containers/image reports it.
func (r *RegistryInspector) inspectWith(ctx context.Context, named reference.Named, sources []pullSource, auth credentials.AuthConfig) (Result, error) {
	var mirrorErrs []error
	for i, src := range sources {
		res, err := r.inspectSource(ctx, named, src, auth)
		if err == nil {
			return res, nil
		}
		if i == len(sources)-1 || ctx.Err() != nil {
			if len(mirrorErrs) == 0 {
				return Result{}, err
			}
			return Result{}, fmt.Errorf("%w (mirrors also failed: %v)", err, errors.Join(mirrorErrs...))
		}
		mirrorErrs = append(mirrorErrs, fmt.Errorf("%s: %w", src.ref, err))
	}
	return Result{}, errors.New("no pull source") // unreachable: the image's own registry is always a source
}

// dockerHubHost is where docker.io's API is served, as containers/image reaches it.
const dockerHubHost = "registry-1.docker.io"

// inspectSource reads the manifest and, for a single image, its config from one pull source.
// The credential goes only to the image's own registry host: a mirror on another host gets the
// auth file's credential for it, never the pod's, as containers/image sends them.
func (r *RegistryInspector) inspectSource(ctx context.Context, named reference.Named, src pullSource, auth credentials.AuthConfig) (Result, error) {
	if src.err != nil {
		return Result{}, src.err
	}
	domain := reference.Domain(src.ref)
	if domain != reference.Domain(named) {
		a, err := dockerconfig.GetCredentialsForRef(r.authFileContext(), src.ref)
		if err != nil {
			return Result{}, fmt.Errorf("credentials of mirror %s: %w", domain, err)
		}
		auth = credentials.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken}
	}
	host := domain
	if host == "docker.io" {
		host = dockerHubHost
	}
	repo, rt, forget, err := r.client.repository(ctx, host, reference.Path(src.ref), src.insecure, auth)
	if err != nil {
		return Result{}, err
	}
	f := fetcher{repo: repo, opts: []remote.Option{remote.WithTransport(rt), remote.WithContext(ctx)}}
	res, err := f.inspect(ctx, src.ref)
	if err != nil && classify(err) == ReasonAuth {
		forget()
	}
	return res, err
}

// fetcher reads one repository's manifests and blobs over a kept transport.
type fetcher struct {
	repo name.Repository
	opts []remote.Option
}

// inspect reads the manifest of ref and, for a single image, its config. A manifest list is
// judged by its entries' platforms alone (reading every entry's config would cost a request
// per entry), so the no-binaries label is only seen on single images.
func (f fetcher) inspect(ctx context.Context, ref reference.Named) (Result, error) {
	var target name.Reference = f.repo.Tag("latest")
	if c, ok := ref.(reference.Canonical); ok {
		target = f.repo.Digest(c.Digest().String())
	} else if t, ok := ref.(reference.Tagged); ok {
		target = f.repo.Tag(t.Tag())
	}
	blob, mimeType, err := f.manifest(target)
	if err != nil {
		return Result{}, err
	}
	dgst, err := manifest.Digest(blob)
	if err != nil {
		return Result{}, err
	}
	res := Result{Digest: dgst.String(), MediaType: mimeType}

	if manifest.MIMETypeIsMultiImage(mimeType) {
		entries, err := PlatformsFromBlob(blob, mimeType)
		if err != nil {
			return Result{}, fmt.Errorf("parsing manifest list of %s: %w", ref, err)
		}
		if entries, err = f.resolveEntries(entries); err != nil {
			return Result{}, fmt.Errorf("resolving the entries of %s: %w", ref, err)
		}
		res.Architectures, res.Platforms = LinuxArchitectures(entries), OSPlatforms(entries)
		return res, nil
	}
	info, err := f.image(blob, mimeType)
	if err != nil {
		return Result{}, fmt.Errorf("reading image config of %s: %w", ref, err)
	}
	if HasNoBinaries(info.Labels) {
		res.AnyArchitecture = true
		res.Architectures, res.Platforms = []string{}, []string{}
		return res, nil
	}
	res.Architectures, res.Platforms = ConfigArchitectures(info.Os, info.Architecture), ConfigPlatforms(info.Os, info.Architecture)
	return res, nil
}

// manifest reads one manifest and its normalized media type (guessed from the content when the
// registry sends none). A digest reference is checked against its digest.
func (f fetcher) manifest(ref name.Reference) ([]byte, string, error) {
	desc, err := remote.Get(ref, f.opts...)
	if err != nil {
		return nil, "", err
	}
	mimeType := string(desc.MediaType)
	if mimeType == "" {
		mimeType = manifest.GuessMIMEType(desc.Manifest)
	}
	return desc.Manifest, manifest.NormalizedMIMEType(mimeType), nil
}

// image reads what a single image's config says (its platform and labels), the config blob
// fetched and checked against its digest; a schema 1 manifest carries it itself.
func (f fetcher) image(blob []byte, mimeType string) (*types.ImageInspectInfo, error) {
	m, err := manifest.FromBlob(blob, mimeType)
	if err != nil {
		return nil, fmt.Errorf("parsing manifest: %w", err)
	}
	return m.Inspect(func(bi types.BlobInfo) ([]byte, error) { return f.blob(bi.Digest) })
}

func (f fetcher) blob(d digest.Digest) ([]byte, error) {
	layer, err := remote.Layer(f.repo.Digest(d.String()), f.opts...)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed() // verifies the digest at the end of the read
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// maxResolvedEntries bounds the index entries without a platform one inspection resolves:
// each costs a manifest and a config request, and the index is the registry's to write.
const maxResolvedEntries = 8

// resolveEntries gives the entries of an index that do not say what they run on the platform
// a runtime finds for them, as containerd does when it pulls: an image's from its config, a
// nested index's from its own entries (one level down). Such images are valid and pullable;
// left out, they would leave the pod with no architecture at all. An entry that cannot be
// resolved is an error, so the pod is released with the reason rather than kept off every node.
func (f fetcher) resolveEntries(entries []Platform) ([]Platform, error) {
	out := make([]Platform, 0, len(entries))
	resolved := 0
	for _, e := range entries {
		if e.known() {
			out = append(out, e)
			continue
		}
		if resolved++; resolved > maxResolvedEntries {
			return nil, fmt.Errorf("more than %d entries without a platform", maxResolvedEntries)
		}
		d, err := digest.Parse(e.Digest)
		if err != nil {
			return nil, fmt.Errorf("an entry without a platform has digest %q: %w", e.Digest, err)
		}
		blob, mt, err := f.manifest(f.repo.Digest(d.String()))
		if err != nil {
			return nil, fmt.Errorf("entry %s without a platform: %w", d, err)
		}
		if !manifest.MIMETypeIsMultiImage(mt) {
			info, err := f.image(blob, mt)
			if err != nil {
				return nil, fmt.Errorf("entry %s without a platform: %w", d, err)
			}
			out = append(out, Platform{OS: cmp.Or(info.Os, "linux"), Architecture: info.Architecture, Variant: info.Variant})
			continue
		}
		inner, err := PlatformsFromBlob(blob, cmp.Or(mt, e.MediaType))
		if err != nil {
			return nil, fmt.Errorf("nested index %s: %w", d, err)
		}
		for _, p := range inner {
			if !p.known() {
				return nil, fmt.Errorf("nested index %s has an entry without a platform (two levels down)", d)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// authFileContext is what containers/image reads a mirror's credential with: the auth file
// only (no per-call credential), as it does for a mirror on another host.
func (r *RegistryInspector) authFileContext() *types.SystemContext {
	sys := r.opts.registriesConfContext()
	sys.AuthFilePath = r.opts.AuthFilePath
	return sys
}

// describe names where a credential came from, never what it contains.
func describe(c credentials.Credential) string {
	s := "from " + c.Source.String()
	if c.Pattern != "" {
		s += " for " + c.Pattern
	}
	return s
}
