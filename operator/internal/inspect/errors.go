package inspect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/archgate/archgate/operator/internal/egress"
)

// Reason classifies an inspection error, for metrics and for the caller's retry policy.
type Reason string

// The reasons an inspection fails.
const (
	// ReasonAuth: the registry refused the credentials (401/403), or none were sent.
	ReasonAuth Reason = "auth"
	// ReasonNotFound: no such repository, tag or digest (404).
	ReasonNotFound Reason = "not-found"
	// ReasonTimeout: the per-image deadline (or the caller's) passed.
	ReasonTimeout Reason = "timeout"
	// ReasonNetwork: connection, DNS or TLS failure, or a 5xx answer.
	ReasonNetwork Reason = "network"
	// ReasonRateLimited: the registry kept answering 429.
	ReasonRateLimited Reason = "rate-limited"
	// ReasonInvalidReference: the image reference cannot be parsed; retrying cannot help.
	ReasonInvalidReference Reason = "invalid-reference"
	// ReasonBlocked: registries.conf blocks the image's registry (and gives it no mirror);
	// retrying cannot help.
	ReasonBlocked Reason = "blocked"
	// ReasonCircuitOpen: the registry's host kept making inspections time out, and is not
	// asked again for a while (see DefaultBreakerFailures); retried later.
	ReasonCircuitOpen Reason = "circuit-open"
	// ReasonRegistryBusy: the registry already had its limit of inspections in flight
	// (DefaultMaxInspectionsPerRegistry); retried shortly, not a failure of the image.
	ReasonRegistryBusy Reason = "registry-busy"
	// ReasonCanceled: the caller gave up (context canceled); not a registry problem.
	ReasonCanceled Reason = "canceled"
	// ReasonOther: anything else (malformed manifest, unsupported media type, …).
	ReasonOther Reason = "other"
)

// Reasons returns every Reason, in a new slice (metrics create a series for each).
func Reasons() []Reason {
	return []Reason{ReasonAuth, ReasonNotFound, ReasonTimeout, ReasonNetwork, ReasonRateLimited,
		ReasonInvalidReference, ReasonBlocked, ReasonCircuitOpen, ReasonRegistryBusy, ReasonCanceled, ReasonOther}
}

// Error is an inspection failure of one image.
type Error struct {
	// Image is the reference as the caller passed it.
	Image string
	// Reason classifies Err.
	Reason Reason
	// Err is the underlying error: one per credential tried, joined.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("inspecting image %s (%s): %v", e.Image, e.Reason, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason of an inspection error: the Reason of an *Error in its chain,
// or a classification of err itself.
func ReasonOf(err error) Reason {
	var ie *Error
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return classify(err)
}

// classify maps an error of a registry request (go-containerregistry's transport) to a Reason.
func classify(err error) Reason {
	if err == nil {
		return ""
	}
	// A refusal of the egress proxy comes back as text only (a refused CONNECT becomes an error
	// of its status text); it is archgate's own decision, like a registries.conf block.
	if strings.Contains(err.Error(), egress.Marker) {
		return ReasonBlocked
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonTimeout
	}
	// A registry's answer other than success, whatever its body says (the distribution error
	// codes only restate the status).
	var status *transport.Error
	if errors.As(err, &status) {
		if r := reasonForStatus(status.StatusCode); r != "" {
			return r
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ReasonTimeout
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalidCert      x509.CertificateInvalidError
		tlsRecord        tls.RecordHeaderError
		tlsVerify        *tls.CertificateVerificationError
	)
	if errors.As(err, &netErr) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalidCert) || errors.As(err, &tlsRecord) || errors.As(err, &tlsVerify) {
		return ReasonNetwork
	}
	return ReasonOther
}

func reasonForStatus(code int) Reason {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return ReasonAuth
	case code == http.StatusNotFound:
		return ReasonNotFound
	case code == http.StatusTooManyRequests:
		return ReasonRateLimited
	case code >= 500:
		return ReasonNetwork
	}
	return ""
}

// tryNextCredential reports whether an attempt that failed for this reason should be
// repeated with the next candidate credential. Registries answer 401/403 for credentials
// without access and, to hide private repositories, often 404: those move on, like the
// kubelet does. Timeouts, network errors and rate limits would fail again the same way
// and only spend the deadline, so they stop.
func tryNextCredential(r Reason) bool {
	return r == ReasonAuth || r == ReasonNotFound
}
