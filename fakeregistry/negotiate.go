package fakeregistry

import (
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Negotiation is how the registry answers a manifest request whose Accept header does not list the
// stored manifest's media type.
type Negotiation string

const (
	// NegotiateDefaultPlatform does what the Docker registry (distribution) does: for an index or
	// manifest list the client does not accept, it serves the linux/amd64 image manifest of the list
	// instead (404 MANIFEST_UNKNOWN when there is none or the client does not accept that either); an
	// OCI image manifest the client does not accept is 404 MANIFEST_UNKNOWN; a Docker schema 2
	// manifest is always served. The zero value.
	NegotiateDefaultPlatform Negotiation = "default-platform"
	// NegotiateNotFound models a registry that cannot serve indexes to old clients: any manifest the
	// client does not accept is 404 MANIFEST_UNKNOWN.
	NegotiateNotFound Negotiation = "not-found"
	// NegotiateIgnoreAccept serves every manifest as stored whatever the client accepts, as some
	// registries and go-containerregistry's pkg/registry do.
	NegotiateIgnoreAccept Negotiation = "ignore-accept"
)

// Negotiations lists every negotiation mode.
func Negotiations() []Negotiation {
	return []Negotiation{NegotiateDefaultPlatform, NegotiateNotFound, NegotiateIgnoreAccept}
}

// verdict is what negotiate decides for one manifest.
type verdict int

const (
	// serveStored serves the manifest as stored.
	serveStored verdict = iota
	// serveDefaultPlatform serves the list's linux/amd64 manifest instead.
	serveDefaultPlatform
	// notAcceptable answers 404 MANIFEST_UNKNOWN.
	notAcceptable
)

// acceptSet is the media types of a request's Accept headers.
type acceptSet struct {
	// any is true without an Accept header or with */*: clients such as curl get what is stored.
	any   bool
	types []string
}

// parseAccept reads every Accept header (each may list several types; parameters are dropped and
// q=0 entries excluded).
func parseAccept(headers []string) acceptSet {
	var s acceptSet
	for _, h := range headers {
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
					continue
				}
			}
			if mt == "*/*" {
				s.any = true
			}
			s.types = append(s.types, mt)
		}
	}
	if len(s.types) == 0 {
		s.any = true
	}
	return s
}

// accepts reports whether the client accepts mediaType.
func (s acceptSet) accepts(mediaType string) bool {
	return s.any || slices.Contains(s.types, mediaType)
}

// negotiate decides how to answer a client accepting accept for a stored manifest of mediaType.
func negotiate(mode Negotiation, accept acceptSet, mediaType string) verdict {
	if mode == NegotiateIgnoreAccept || accept.accepts(mediaType) {
		return serveStored
	}
	mt := types.MediaType(mediaType)
	switch {
	case mode == NegotiateNotFound:
		return notAcceptable
	case mt.IsIndex():
		return serveDefaultPlatform
	case mt == types.DockerManifestSchema2:
		return serveStored
	}
	return notAcceptable
}

// page is one page of a lexically ordered listing.
type page struct {
	entries []string
	// next is the last entry of the page when more entries follow, for the Link header.
	next string
	n    int
}

// paginate returns the entries after the query's last, at most n of them (all without n), as the
// distribution spec pages tags and the catalog. sorted must be in lexical order.
func paginate(sorted []string, q url.Values) (page, error) {
	entries := sorted
	if last := q.Get("last"); last != "" {
		i, _ := slices.BinarySearch(entries, last)
		for i < len(entries) && entries[i] <= last {
			i++
		}
		entries = entries[i:]
	}
	ns := q.Get("n")
	if ns == "" {
		return page{entries: slices.Clone(entries)}, nil
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 0 {
		return page{}, errPaginationNumber
	}
	p := page{entries: slices.Clone(entries[:min(n, len(entries))]), n: n}
	if n > 0 && n < len(entries) {
		p.next = p.entries[n-1]
	}
	return p, nil
}

// link returns the RFC 8288 Link header of the next page at path, or "" on the last page.
func (p page) link(path string) string {
	if p.next == "" {
		return ""
	}
	q := url.Values{"last": {p.next}, "n": {strconv.Itoa(p.n)}}
	return "<" + path + "?" + q.Encode() + `>; rel="next"`
}
