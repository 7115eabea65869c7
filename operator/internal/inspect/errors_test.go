package inspect

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("reading manifest 1 in r.example/app: %w", err) }
	tests := map[string]struct {
		err  error
		want Reason
	}{
		"401":                      {err: wrap(&transport.Error{StatusCode: 401, Errors: []transport.Diagnostic{{Code: transport.UnauthorizedErrorCode}}}), want: ReasonAuth},
		"403 denied":               {err: wrap(&transport.Error{StatusCode: 403, Errors: []transport.Diagnostic{{Code: transport.DeniedErrorCode, Message: "no access to team"}}}), want: ReasonAuth},
		"manifest unknown":         {err: wrap(&transport.Error{StatusCode: 404, Errors: []transport.Diagnostic{{Code: transport.ManifestUnknownErrorCode}}}), want: ReasonNotFound},
		"404 without a body":       {err: wrap(&transport.Error{StatusCode: 404}), want: ReasonNotFound},
		"502":                      {err: wrap(&transport.Error{StatusCode: 502}), want: ReasonNetwork},
		"too many requests":        {err: wrap(&transport.Error{StatusCode: 429, Errors: []transport.Diagnostic{{Code: transport.TooManyRequestsErrorCode}}}), want: ReasonRateLimited},
		"400 unsupported":          {err: wrap(&transport.Error{StatusCode: 400, Errors: []transport.Diagnostic{{Code: transport.UnsupportedErrorCode}}}), want: ReasonOther},
		"answer too large":         {err: wrap(errResponseTooLarge), want: ReasonOther},
		"deadline":                 {err: wrap(context.DeadlineExceeded), want: ReasonTimeout},
		"canceled":                 {err: wrap(context.Canceled), want: ReasonCanceled},
		"dial refused":             {err: wrap(&url.Error{Op: "Get", URL: "https://r.example/v2/", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}), want: ReasonNetwork},
		"dns":                      {err: wrap(&net.DNSError{Err: "no such host", Name: "r.example", IsNotFound: true}), want: ReasonNetwork},
		"dns timeout":              {err: wrap(&net.DNSError{Err: "timeout", Name: "r.example", IsTimeout: true}), want: ReasonTimeout},
		"untrusted certificate":    {err: wrap(x509.UnknownAuthorityError{}), want: ReasonNetwork},
		"malformed manifest":       {err: errors.New("unmarshaling OCI1Index: unexpected end of JSON input"), want: ReasonOther},
		"inspection error carries": {err: fmt.Errorf("pod x: %w", &Error{Reason: ReasonNotFound, Err: errors.New("x")}), want: ReasonNotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ReasonOf(tc.err); got != tc.want {
				t.Errorf("ReasonOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
