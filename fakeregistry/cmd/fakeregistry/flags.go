package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/fakeregistry"
)

// serveFlags are the flags of the serve command; options turns them into fakeregistry.Options.
type serveFlags struct {
	catalog  string
	layouts  []string
	addr     string
	tls      bool
	hostname string
	certsDir string
	verbose  bool
	writable bool
	noDelete bool

	authMode  string
	authFile  string
	users     []string
	pull      []string
	push      []string
	anonymous []string
	service   string
	tokenTTL  time.Duration

	outage      string
	latency     []string
	errorRate   float64
	tooManyRate float64
	retryAfter  time.Duration
	hangRate    float64
	faultKinds  []string
	faultRepos  []string
	// tarpitRepos, tarpitSize and tarpitRate build Faults.Tarpit.
	tarpitRepos            []string
	tarpitSize, tarpitRate int
	seed                   uint64
	metricsAddr            string
	changedFlags           func(name string) bool
}

// register adds the flags to fs.
func (f *serveFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.catalog, "catalog", "", "catalog YAML file (empty: serve no images, e.g. for pushes)")
	fs.StringArrayVar(&f.layouts, "layout", nil, "REPOSITORY=DIR: serve the OCI image layout in DIR under REPOSITORY (repeatable)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:5000", "listen address")
	fs.BoolVar(&f.tls, "tls", false, "serve HTTPS with a CA generated at start")
	fs.StringVar(&f.hostname, "hostname", fakeregistry.DefaultTLSHostname, "extra DNS name in the serving certificate (with --tls)")
	fs.StringVar(&f.certsDir, "certs-dir", "", "with --tls, write the CA as <dir>/<host:port>/ca.crt (certs.d layout)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log to stderr")
	fs.BoolVar(&f.writable, "writable", false, "accept pushes and deletions (within --push rules when auth is on)")
	fs.BoolVar(&f.noDelete, "no-delete", false, "with --writable, refuse DELETE of manifests, tags and blobs (405), as registries with deletion disabled do")
	fs.StringVar(&f.authMode, "auth-mode", "", "none, basic or bearer (default none, or the auth file's mode)")
	fs.StringVar(&f.authFile, "auth-file", "", "YAML file with mode, users (password, repositories, push), anonymous, service")
	fs.StringArrayVar(&f.users, "user", nil, "NAME:PASSWORD of a user (repeatable)")
	fs.StringArrayVar(&f.pull, "pull", nil, "NAME=PATTERN: the user may pull repositories matching PATTERN (repeatable)")
	fs.StringArrayVar(&f.push, "push", nil, "NAME=PATTERN: the user may push to repositories matching PATTERN (repeatable; needs --writable)")
	fs.StringArrayVar(&f.anonymous, "anonymous", nil, "PATTERN anyone may pull without credentials (repeatable)")
	fs.StringVar(&f.service, "service", "", "bearer service name (default "+fakeregistry.DefaultService+")")
	fs.DurationVar(&f.tokenTTL, "token-ttl", 0, "bearer token lifetime (default 5m)")
	fs.StringVar(&f.outage, "outage", "", "unavailable (503 everything) or reset (abort everything)")
	fs.StringArrayVar(&f.latency, "latency", nil, "KIND=fixed:D | uniform:MIN-MAX | lognormal:P50,P99 (KIND a request kind or *; repeatable)")
	fs.Float64Var(&f.errorRate, "error-rate", 0, "probability of 500 answers")
	fs.Float64Var(&f.tooManyRate, "too-many-requests-rate", 0, "probability of 429 answers")
	fs.DurationVar(&f.retryAfter, "retry-after", 0, "Retry-After of 429 answers")
	fs.Float64Var(&f.hangRate, "hang-rate", 0, "probability of never answering")
	fs.StringSliceVar(&f.faultKinds, "fault-kinds", nil, "request kinds the rates apply to (default all)")
	fs.StringSliceVar(&f.faultRepos, "fault-repositories", nil, "repository patterns the rates apply to (default all)")
	fs.StringSliceVar(&f.tarpitRepos, "tarpit-repositories", nil, "repository patterns whose manifest requests, any reference, get a large index sent slowly")
	fs.IntVar(&f.tarpitSize, "tarpit-size", 4<<20, "size in bytes of the tarpit's index")
	fs.IntVar(&f.tarpitRate, "tarpit-bytes-per-second", 64<<10, "pace of the tarpit's answer")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the fault generator")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the request counters at /metrics (Prometheus text) on HOST:PORT, or on a Unix socket with unix:PATH (empty: not served)")
}

// options validates the flags and builds the registry options (without catalog and logger).
func (f *serveFlags) options() (fakeregistry.Options, error) {
	var errs []error
	if f.certsDir != "" && !f.tls {
		errs = append(errs, errors.New("--certs-dir needs --tls: a plain HTTP registry has no CA to write"))
	}
	if f.changed("hostname") && !f.tls {
		errs = append(errs, errors.New("--hostname needs --tls: it names the serving certificate"))
	}
	if len(f.push) > 0 && !f.writable {
		errs = append(errs, errors.New("--push needs --writable: a read-only registry accepts no pushes"))
	}
	if f.noDelete && !f.writable {
		errs = append(errs, errors.New("--no-delete needs --writable: a read-only registry refuses deletions anyway"))
	}
	auth, err := f.auth()
	if err != nil {
		errs = append(errs, err)
	}
	faults, err := f.faults()
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fakeregistry.Options{}, err
	}
	return fakeregistry.Options{
		Addr: f.addr, TLS: f.tls, TLSHostname: f.hostname, Auth: auth, Faults: faults, Seed: f.seed, Writable: f.writable,
		NoDelete: f.noDelete,
	}, nil
}

// loadCatalog builds the catalog from --catalog and --layout; nil when neither is set.
func (f *serveFlags) loadCatalog() (*fakeregistry.Catalog, error) {
	layouts, err := parseLayouts(f.layouts)
	if err != nil {
		return nil, err
	}
	switch {
	case f.catalog != "":
		return fakeregistry.LoadCatalog(f.catalog, layouts...)
	case len(layouts) > 0:
		c, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{Layouts: layouts})
		if err != nil {
			return nil, fmt.Errorf("--layout: %w", err)
		}
		return c, nil
	}
	return nil, nil
}

// parseLayouts reads REPOSITORY=DIR values of --layout.
func parseLayouts(values []string) ([]fakeregistry.LayoutSpec, error) {
	var out []fakeregistry.LayoutSpec
	for _, v := range values {
		repo, dir, ok := strings.Cut(v, "=")
		if !ok || repo == "" || dir == "" {
			return nil, fmt.Errorf("--layout %q: want REPOSITORY=DIR", v)
		}
		out = append(out, fakeregistry.LayoutSpec{Repository: repo, Path: dir})
	}
	return out, nil
}

// changed reports whether the user set a flag.
func (f *serveFlags) changed(name string) bool {
	return f.changedFlags != nil && f.changedFlags(name)
}

// auth merges the auth file and the auth flags.
func (f *serveFlags) auth() (fakeregistry.Auth, error) {
	var a fakeregistry.Auth
	if f.authFile != "" {
		data, err := os.ReadFile(f.authFile)
		if err != nil {
			return a, fmt.Errorf("reading --auth-file: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &a); err != nil {
			return a, fmt.Errorf("--auth-file %s: %w", f.authFile, err)
		}
	}
	switch f.authMode {
	case "":
	case "none":
		a.Mode = fakeregistry.AuthNone
	default:
		a.Mode = fakeregistry.AuthMode(f.authMode)
	}
	if a.Users == nil {
		a.Users = map[string]fakeregistry.User{}
	}
	var errs []error
	for _, u := range f.users {
		name, pass, ok := strings.Cut(u, ":")
		if !ok || name == "" {
			errs = append(errs, fmt.Errorf("--user %q: want NAME:PASSWORD", u))
			continue
		}
		user := a.Users[name]
		user.Password = pass
		a.Users[name] = user
	}
	errs = append(errs, addRules(a.Users, "--pull", f.pull, func(u *fakeregistry.User, p string) { u.Repositories = append(u.Repositories, p) }))
	errs = append(errs, addRules(a.Users, "--push", f.push, func(u *fakeregistry.User, p string) { u.Push = append(u.Push, p) }))
	a.Anonymous = append(a.Anonymous, f.anonymous...)
	if f.service != "" {
		a.Service = f.service
	}
	a.TokenTTL = f.tokenTTL
	if a.Mode == fakeregistry.AuthNone && (len(a.Users) > 0 || len(a.Anonymous) > 0) {
		errs = append(errs, errors.New("users, --pull, --push and --anonymous need --auth-mode basic or bearer"))
	}
	return a, errors.Join(errs...)
}

// addRules adds NAME=PATTERN rules of flag to known users.
func addRules(users map[string]fakeregistry.User, flag string, rules []string, add func(*fakeregistry.User, string)) error {
	var errs []error
	for _, r := range rules {
		name, pattern, ok := strings.Cut(r, "=")
		u, known := users[name]
		switch {
		case !ok || pattern == "":
			errs = append(errs, fmt.Errorf("%s %q: want NAME=PATTERN", flag, r))
		case !known:
			errs = append(errs, fmt.Errorf("%s %q: unknown user %q (add it with --user or the auth file)", flag, r, name))
		default:
			add(&u, pattern)
			users[name] = u
		}
	}
	return errors.Join(errs...)
}

// faults builds the injected faults; Start validates rates and patterns.
func (f *serveFlags) faults() (fakeregistry.Faults, error) {
	fs := fakeregistry.Faults{
		Outage: fakeregistry.Outage(f.outage), ServerErrorRate: f.errorRate, TooManyRequestsRate: f.tooManyRate,
		RetryAfter: f.retryAfter, HangRate: f.hangRate, Repositories: f.faultRepos,
	}
	for _, k := range f.faultKinds {
		fs.Kinds = append(fs.Kinds, fakeregistry.RequestKind(k))
	}
	if len(f.tarpitRepos) > 0 {
		fs.Tarpit = &fakeregistry.Tarpit{Repositories: f.tarpitRepos, Size: f.tarpitSize, BytesPerSecond: f.tarpitRate}
	}
	var errs []error
	for _, l := range f.latency {
		kind, spec, ok := strings.Cut(l, "=")
		lat, err := parseLatency(spec)
		if !ok || err != nil {
			errs = append(errs, fmt.Errorf("--latency %q: want KIND=fixed:D, KIND=uniform:MIN-MAX or KIND=lognormal:P50,P99 (%v)", l, err))
			continue
		}
		if fs.Latency == nil {
			fs.Latency = map[fakeregistry.RequestKind]fakeregistry.Latency{}
		}
		fs.Latency[fakeregistry.RequestKind(kind)] = lat
	}
	if err := errors.Join(errs...); err != nil {
		return fs, err
	}
	return fs, fs.Validate()
}

// parseLatency parses fixed:D, uniform:MIN-MAX or lognormal:P50,P99.
func parseLatency(s string) (fakeregistry.Latency, error) {
	dist, args, _ := strings.Cut(s, ":")
	var sep string
	switch dist {
	case "fixed":
		d, err := time.ParseDuration(args)
		return fakeregistry.FixedLatency(d), err
	case "uniform":
		sep = "-"
	case "lognormal":
		sep = ","
	default:
		return fakeregistry.Latency{}, fmt.Errorf("unknown distribution %q", dist)
	}
	a, b, ok := strings.Cut(args, sep)
	if !ok {
		return fakeregistry.Latency{}, fmt.Errorf("want two durations separated by %q", sep)
	}
	lo, err1 := time.ParseDuration(a)
	hi, err2 := time.ParseDuration(b)
	if err := errors.Join(err1, err2); err != nil {
		return fakeregistry.Latency{}, err
	}
	if dist == "uniform" {
		return fakeregistry.UniformLatency(lo, hi), nil
	}
	return fakeregistry.LogNormalLatency(lo, hi), nil
}

// kindNames lists the request kinds for help texts.
func kindNames() string {
	var names []string
	for _, k := range fakeregistry.RequestKinds() {
		names = append(names, string(k))
	}
	return strings.Join(slices.Clip(names), ", ") + " or " + strconv.Quote(string(fakeregistry.AllKinds))
}
