// Package fakeregistry is an in-process multi-arch OCI registry for archgate's tests and simulator.
//
// It serves a declarative Catalog (repositories of OCI indexes, Docker manifest lists, single OCI and
// Docker schema2 manifests, with buildx attestation entries, non-linux entries and operator-bundle
// style images without binaries, plus real images from OCI image layout directories) from its own
// store, as the distribution spec asks (content negotiation by Accept, repository-scoped blobs with
// RFC 9110 ranges, paginated tags and catalog, the OCI 1.1 referrers API, JSON errors; pushes with
// Options.Writable, deletion of manifests, tags and blobs, upload sessions tied to their
// repository), behind three layers applied in this order: request counters,
// fault injection, authentication. Content is deterministic: the same
// catalog (and generator seeds) always yields the same digests, and Catalog.TrueArchitectures gives
// the ground truth of where each image can run.
//
// # Transport and clients
//
// With Options.TLS the registry generates an ECDSA CA at start and serves HTTPS with a certificate for
// 127.0.0.1, ::1, localhost and Options.TLSHostname. Otherwise it serves plain HTTP. Use Host()
// (127.0.0.1:port) in image references for both clients below:
//
//   - containers/image (go.podman.io/image/v5, the operator's client) always tries https first. Over
//     TLS give it the CA: Registry.WriteCertsDir(root) writes root/<host:port>/ca.crt; pass root as
//     SystemContext.DockerPerHostCertDirPath, or the returned directory as SystemContext.DockerCertPath
//     (DockerCertPath names the directory that holds ca.crt, not a certs.d root). Over plain HTTP set
//     SystemContext.DockerInsecureSkipTLSVerify to OptionalBoolTrue (or mark the registry insecure in
//     registries.conf): only then does it fall back from https to http.
//   - go-containerregistry's remote client treats 127.0.0.1 and localhost:port as possibly insecure
//     and races https against an http fallback: over TLS it works with a transport whose RootCAs
//     hold CertPool(); over plain HTTP it works without options. For any other host name it uses
//     https only, unless the reference was parsed with name.Insecure.
//
// TLSHostname is in the certificate for clients that can resolve it (a custom dialer or /etc/hosts);
// nothing resolves it by default.
//
// # Auth
//
// See Auth: none, basic, or bearer tokens from the registry's own /token endpoint (Docker token
// spec), with per-user repository patterns and anonymous patterns. Wrong credentials are 401; with
// basic auth a repository outside the user's patterns is 403 DENIED; with bearer auth it is 401 with
// error="insufficient_scope", as Docker's registry does.
//
// # Faults and counters
//
// See Faults (latency per request kind, error and hang rates, full outage; changeable at runtime with
// Registry.SetFaults, deterministic for Options.Seed) and Counters (requests by kind, responses by
// status, manifest requests by reference, injected faults; a prometheus.Collector).
package fakeregistry
