package fakeregistry

import (
	// go-digest names sha512 but hashes with whatever the binary links in; link it here.
	_ "crypto/sha512"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	digest "github.com/opencontainers/go-digest"
)

// digestAlgorithms are the digest algorithms the registry verifies, stores and serves: the two
// the OCI image spec registers, sha256 (canonical) and sha512. go-digest also knows sha384, which
// go-containerregistry's descriptors cannot hold.
var digestAlgorithms = []digest.Algorithm{digest.SHA256, digest.SHA512}

// errDigestAlgorithm is returned for a well-formed digest of an algorithm not in digestAlgorithms.
var errDigestAlgorithm = errors.New("unsupported digest algorithm")

// parseDigest parses a digest a client sent: well formed, of an algorithm in digestAlgorithms.
func parseDigest(s string) (v1.Hash, error) {
	d, err := digest.Parse(s)
	if errors.Is(err, digest.ErrDigestUnsupported) || err == nil && !slices.Contains(digestAlgorithms, d.Algorithm()) {
		alg, _, _ := strings.Cut(s, ":")
		return v1.Hash{}, fmt.Errorf("%w %q in %q (want %s)", errDigestAlgorithm, alg, s, algorithmNames())
	}
	if err != nil {
		return v1.Hash{}, fmt.Errorf("invalid digest %q: %w", s, err)
	}
	return v1.Hash{Algorithm: d.Algorithm().String(), Hex: d.Encoded()}, nil
}

// parseAlgorithm parses the digest-algorithm parameter of an upload.
func parseAlgorithm(s string) (string, error) {
	if !slices.Contains(digestAlgorithms, digest.Algorithm(s)) {
		return "", fmt.Errorf("%w %q (want %s)", errDigestAlgorithm, s, algorithmNames())
	}
	return s, nil
}

// algorithmNames lists digestAlgorithms for messages.
func algorithmNames() string {
	names := make([]string, 0, len(digestAlgorithms))
	for _, a := range digestAlgorithms {
		names = append(names, a.String())
	}
	return strings.Join(names, " or ")
}

// digestWith returns the digest of data computed with algorithm (one of digestAlgorithms).
func digestWith(algorithm string, data []byte) v1.Hash {
	return v1.Hash{Algorithm: algorithm, Hex: digest.Algorithm(algorithm).FromBytes(data).Encoded()}
}

// digestOf returns the canonical (sha256) digest of data.
func digestOf(data []byte) v1.Hash {
	return digestWith(digest.Canonical.String(), data)
}

// isDigest reports whether a manifest reference is meant as a digest: tags never hold a colon.
func isDigest(reference string) bool {
	return strings.Contains(reference, ":")
}

// verifyDigest checks that data has digest want, computed with want's own algorithm; the error
// names the algorithm and both digests.
func verifyDigest(want v1.Hash, data []byte) error {
	if got := digestWith(want.Algorithm, data); got != want {
		return fmt.Errorf("the %s digest of the content is %s, not %s", want.Algorithm, got, want)
	}
	return nil
}
