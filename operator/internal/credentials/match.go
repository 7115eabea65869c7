package credentials

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"go.podman.io/image/v5/docker/reference"
)

// dockerHubHost is the registry host that reference normalisation gives Docker Hub images.
const dockerHubHost = "docker.io"

// dockerHubAliases are the other spellings of Docker Hub found in pull secrets.
var dockerHubAliases = []string{"index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}

// pattern is a normalised pull-secret registry key: host labels (globs allowed, one label
// per "*"), an optional port, and an optional path prefix.
type pattern struct {
	labels    []string // lower-cased host labels
	port      string
	path      string // "" or a prefix starting with "/"
	wildcards int    // number of labels that contain glob characters
}

// parsePattern normalises a registry key the way the kubelet's keyring does: an optional
// http:// or https:// scheme is dropped, a leading /v1/ or /v2/ path element is dropped,
// Docker Hub aliases become docker.io. Host names are compared case-insensitively.
func parsePattern(loc string) (pattern, error) {
	value := strings.TrimSpace(loc)
	if value == "" {
		return pattern{}, errors.New("empty registry key")
	}
	lower := strings.ToLower(value)
	switch {
	case strings.HasPrefix(lower, "https://"):
		value = "https://" + value[len("https://"):]
	case strings.HasPrefix(lower, "http://"):
		value = "https://" + value[len("http://"):]
	default:
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil {
		return pattern{}, errors.New("registry key is not a host[:port][/path]")
	}
	if u.User != nil {
		return pattern{}, errors.New("registry key contains user info")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return pattern{}, errors.New("registry key contains a query or fragment")
	}
	host, port, err := splitHostPort(u.Host)
	if err != nil {
		return pattern{}, err
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p == "/" {
		p = ""
	}
	host = strings.ToLower(host)
	for _, alias := range dockerHubAliases {
		if host == alias {
			host = dockerHubHost
		}
	}
	pat := pattern{labels: strings.Split(host, "."), port: port, path: p}
	for _, l := range pat.labels {
		if l == "" {
			return pattern{}, errors.New("registry host has an empty label")
		}
		if strings.ContainsAny(l, `*?[\`) {
			if _, err := path.Match(l, ""); err != nil {
				return pattern{}, errors.New("registry host has a malformed wildcard")
			}
			pat.wildcards++
		}
	}
	return pat, nil
}

// String returns the normalised key, host[:port][path].
func (p pattern) String() string {
	s := strings.Join(p.labels, ".")
	if p.port != "" {
		s = net.JoinHostPort(s, p.port)
	}
	return s + p.path
}

// target is the registry host, port and repository path of an image reference.
type target struct {
	labels []string
	port   string
	path   string // "/" + repository path
}

// parseTarget splits an image reference (short names allowed; tag and digest ignored).
func parseTarget(image string) (target, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(image))
	if err != nil {
		return target{}, fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	host, port, err := splitHostPort(reference.Domain(named))
	if err != nil {
		return target{}, fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	return target{
		labels: strings.Split(strings.ToLower(host), "."),
		port:   port,
		path:   "/" + reference.Path(named),
	}, nil
}

// matches reports whether a credential keyed by p applies to t, with the kubelet's rules:
// ports equal (no port matches only no port), the same number of host labels, each label
// matching as a glob, and the key's path a string prefix of the repository path. As in the
// kubelet, the prefix is not cut at "/": "r.example/team" also applies to
// "r.example/teammate/app".
func (p pattern) matches(t target) bool {
	if p.port != t.port || len(p.labels) != len(t.labels) {
		return false
	}
	if !strings.HasPrefix(t.path, p.path) {
		return false
	}
	for i, l := range p.labels {
		if ok, err := path.Match(l, t.labels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// compareSpecificity orders patterns most specific first: a longer path prefix first, then
// fewer wildcard labels (an exact host beats a wildcard), then, like the kubelet, the
// reverse lexical order of the key. It returns <0 when a is more specific than b.
func compareSpecificity(a, b pattern) int {
	if len(a.path) != len(b.path) {
		return len(b.path) - len(a.path)
	}
	if a.wildcards != b.wildcards {
		return a.wildcards - b.wildcards
	}
	return strings.Compare(b.String(), a.String())
}

// ValidatePattern checks a registry pattern (host[:port][/path], globs allowed in the host
// labels), such as an entry of a kubelet credential provider's matchImages.
func ValidatePattern(loc string) error {
	_, err := parsePattern(loc)
	return err
}

// MatchImage reports whether the registry pattern applies to the image reference, with the
// kubelet's rules (see pattern.matches): they are the same for pull-secret keys, for the
// matchImages of a CredentialProviderConfig and for the keys of a plugin's response. The
// kubelet's implementation (k8s.io/kubernetes/pkg/credentialprovider) cannot be imported
// here, so this package holds the one copy of the rules.
func MatchImage(loc, image string) (bool, error) {
	p, err := parsePattern(loc)
	if err != nil {
		return false, fmt.Errorf("pattern %s: %w", displayPattern(loc), err)
	}
	t, err := parseTarget(image)
	if err != nil {
		return false, err
	}
	return p.matches(t), nil
}

// Repository returns the normalised repository of an image reference, without tag or digest
// ("docker.io/library/nginx" for "nginx:1.27"): what the kubelet sends a credential provider.
func Repository(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(image))
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	return named.Name(), nil
}

// Registry returns the registry host[:port] of an image reference ("docker.io" for "nginx").
func Registry(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(image))
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	return reference.Domain(named), nil
}

func splitHostPort(hostport string) (host, port string, err error) {
	if hostport == "" {
		return "", "", errors.New("registry host is empty")
	}
	if !strings.Contains(hostport, ":") || (strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]")) {
		return strings.Trim(hostport, "[]"), "", nil
	}
	host, port, err = net.SplitHostPort(hostport)
	if err != nil {
		return "", "", errors.New("registry host has a malformed port")
	}
	if host == "" {
		return "", "", errors.New("registry host is empty")
	}
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return "", "", errors.New("registry host has a malformed port")
	}
	return host, port, nil
}
