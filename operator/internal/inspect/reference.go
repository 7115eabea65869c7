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

// WrittenForms returns the references a pod may write for the image whose CanonicalReference is
// canonical, canonical included: Docker Hub images without "docker.io/" and official images
// without "library/", and ":latest" tags without the tag. Each of them has canonical as its
// CanonicalReference. Other spellings (a legacy "index.docker.io/" host, a tag beside a digest)
// are left out: a pod writing one is gated and placed by the controller. The admission policy
// looks pods' images up by these forms, as CEL cannot parse references.
func WrittenForms(canonical string) []string {
	name, suffix := canonical, ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, suffix = name[:i], name[i:]
	} else if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, suffix = name[:i], name[i:]
	}
	names := []string{name}
	if path, ok := strings.CutPrefix(name, dockerHubDomain+"/"); ok {
		names = append(names, path)
		if short, ok := strings.CutPrefix(path, "library/"); ok && !strings.Contains(short, "/") {
			names = append(names, short, dockerHubDomain+"/"+short)
		}
	}
	suffixes := []string{suffix}
	if suffix == ":latest" {
		suffixes = append(suffixes, "")
	}
	forms := make([]string, 0, len(names)*len(suffixes))
	for _, n := range names {
		for _, s := range suffixes {
			forms = append(forms, n+s)
		}
	}
	return forms
}

// dockerHubDomain is the registry host of references without one.
const dockerHubDomain = "docker.io"
