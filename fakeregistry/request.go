package fakeregistry

import (
	"net/http"
	"strings"
)

// RequestKind classifies a registry request for counters and faults.
type RequestKind string

const (
	// KindPing is the API version check GET /v2/.
	KindPing RequestKind = "ping"
	// KindToken is a request to the bearer token endpoint.
	KindToken RequestKind = "token"
	// KindManifestGet is GET /v2/<name>/manifests/<reference>.
	KindManifestGet RequestKind = "manifest_get"
	// KindManifestHead is HEAD /v2/<name>/manifests/<reference>.
	KindManifestHead RequestKind = "manifest_head"
	// KindBlobGet is GET /v2/<name>/blobs/<digest>.
	KindBlobGet RequestKind = "blob_get"
	// KindBlobHead is HEAD /v2/<name>/blobs/<digest>.
	KindBlobHead RequestKind = "blob_head"
	// KindManifestDelete is DELETE /v2/<name>/manifests/<reference>, of a manifest or a tag.
	KindManifestDelete RequestKind = "manifest_delete"
	// KindBlobDelete is DELETE /v2/<name>/blobs/<digest>.
	KindBlobDelete RequestKind = "blob_delete"
	// KindOther is every other request (tag lists, catalog, uploads and their cancelling, manifest
	// pushes, unknown paths).
	KindOther RequestKind = "other"
	// AllKinds is the Faults.Latency key that applies to kinds without their own entry.
	AllKinds RequestKind = "*"
)

// RequestKinds lists every concrete request kind, in a stable order.
func RequestKinds() []RequestKind {
	return []RequestKind{KindPing, KindToken, KindManifestGet, KindManifestHead, KindBlobGet, KindBlobHead,
		KindManifestDelete, KindBlobDelete, KindOther}
}

// tokenPath is where the bearer token endpoint is served.
const tokenPath = "/token"

// requestInfo is what the handler chain needs to know about a request.
type requestInfo struct {
	kind RequestKind
	// repository is the repository the request addresses, empty for ping, token and catalog.
	repository string
	// reference is the tag or digest of a manifest request, the digest of a blob request, or the
	// session id of an upload request (empty when starting one).
	reference string
	// endpoint is the API the path addresses.
	endpoint endpoint
	// write is true for methods that change content (everything but GET and HEAD).
	write bool
}

// deletes reports whether the request deletes content: a manifest, a tag or a blob (cancelling an
// upload is not deleting content).
func (i requestInfo) deletes() bool {
	return i.kind == KindManifestDelete || i.kind == KindBlobDelete
}

// endpoint names a registry API.
type endpoint string

const (
	endpointUnknown   endpoint = ""
	endpointPing      endpoint = "ping"
	endpointToken     endpoint = "token"
	endpointCatalog   endpoint = "catalog"
	endpointManifests endpoint = "manifests"
	endpointBlobs     endpoint = "blobs"
	endpointUploads   endpoint = "uploads"
	endpointTags      endpoint = "tags"
	endpointReferrers endpoint = "referrers"
)

// classify derives the request kind, endpoint, repository and reference from the method and path.
func classify(r *http.Request) requestInfo {
	info := classifyPath(r)
	// Upload sessions belong to pushers, so even their status GET needs push rights.
	info.write = r.Method != http.MethodGet && r.Method != http.MethodHead || info.endpoint == endpointUploads
	return info
}

// classifyPath classifies by path, and by method only where the kind needs it.
func classifyPath(r *http.Request) requestInfo {
	p := r.URL.Path
	switch p {
	case "/v2/", "/v2":
		return requestInfo{kind: KindPing, endpoint: endpointPing}
	case tokenPath:
		return requestInfo{kind: KindToken, endpoint: endpointToken}
	case "/v2/_catalog":
		return requestInfo{kind: KindOther, endpoint: endpointCatalog}
	}
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return requestInfo{kind: KindOther}
	}
	elems := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	n := len(elems)
	if n >= 3 && elems[n-2] == "manifests" {
		return referenceRequest(r.Method, elems, endpointManifests, KindManifestGet, KindManifestHead, KindManifestDelete)
	}
	if n >= 3 && elems[n-2] == "blobs" && elems[n-1] != "uploads" {
		return referenceRequest(r.Method, elems, endpointBlobs, KindBlobGet, KindBlobHead, KindBlobDelete)
	}
	if n >= 3 && elems[n-2] == "referrers" {
		return requestInfo{kind: KindOther, repository: strings.Join(elems[:n-2], "/"), reference: elems[n-1],
			endpoint: endpointReferrers}
	}
	if n >= 3 && elems[n-2] == "tags" && elems[n-1] == "list" {
		return requestInfo{kind: KindOther, repository: strings.Join(elems[:n-2], "/"), endpoint: endpointTags}
	}
	for i := n - 1; i >= 1; i-- {
		if elems[i] == "blobs" && i+1 < n && elems[i+1] == "uploads" {
			return requestInfo{kind: KindOther, repository: strings.Join(elems[:i], "/"),
				reference: strings.Join(elems[i+2:], "/"), endpoint: endpointUploads}
		}
	}
	return requestInfo{kind: KindOther}
}

// referenceRequest classifies a request on <name>/<endpoint>/<reference> (elems, at least three),
// whose method picks the kind: get, head or del; any other method is KindOther.
func referenceRequest(method string, elems []string, ep endpoint, get, head, del RequestKind) requestInfo {
	n := len(elems)
	info := requestInfo{kind: KindOther, repository: strings.Join(elems[:n-2], "/"), reference: elems[n-1], endpoint: ep}
	switch method {
	case http.MethodGet:
		info.kind = get
	case http.MethodHead:
		info.kind = head
	case http.MethodDelete:
		info.kind = del
	}
	return info
}
