package inspect

import (
	"fmt"
	"strings"

	"go.podman.io/image/v5/docker/reference"
)

// ParseReference parses an image reference the way the kubelet resolves a pod's image:
// short names get docker.io (and library/), a missing tag becomes ":latest", and a reference
// with both a tag and a digest ("repo:tag@sha256:…") keeps only the digest — the digest is
// what the runtime pulls, and podman's docker transport refuses references with both.
func ParseReference(image string) (reference.Named, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(image))
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	if canonical, ok := named.(reference.Canonical); ok {
		if _, tagged := named.(reference.NamedTagged); tagged {
			named, err = reference.WithDigest(reference.TrimNamed(named), canonical.Digest())
			if err != nil {
				return nil, fmt.Errorf("parsing image reference %q: %w", image, err)
			}
		}
		return named, nil
	}
	return reference.TagNameOnly(named), nil
}

// CanonicalReference returns the fully qualified form of an image reference
// ("docker.io/library/nginx:latest", "registry.example:5000/team/app@sha256:…") and whether
// it is pinned by digest. Equal images give equal strings, so it serves as a cache key.
func CanonicalReference(image string) (ref string, digestPinned bool, err error) {
	named, err := ParseReference(image)
	if err != nil {
		return "", false, err
	}
	_, digestPinned = named.(reference.Canonical)
	return named.String(), digestPinned, nil
}
