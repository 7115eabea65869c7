package inspect

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/docker/distribution/registry/api/errcode"
	v2 "github.com/docker/distribution/registry/api/v2"
	"go.podman.io/image/v5/docker"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("reading manifest 1 in r.example/app: %w", err) }
	tests := map[string]struct {
		err  error
		want Reason
	}{
		"token refused":            {err: docker.ErrUnauthorizedForCredentials{Err: errors.New("denied")}, want: ReasonAuth},
		"errcode unauthorized":     {err: wrap(errcode.ErrorCodeUnauthorized), want: ReasonAuth},
		"errcode denied message":   {err: wrap(errcode.ErrorCodeDenied.WithMessage("no access to team")), want: ReasonAuth},
		"manifest unknown":         {err: wrap(v2.ErrorCodeManifestUnknown), want: ReasonNotFound},
		"name unknown":             {err: wrap(v2.ErrorCodeNameUnknown.WithMessage("repository x not found")), want: ReasonNotFound},
		"unexpected 404":           {err: wrap(docker.UnexpectedHTTPStatusError{StatusCode: 404}), want: ReasonNotFound},
		"unexpected 403":           {err: wrap(docker.UnexpectedHTTPStatusError{StatusCode: 403}), want: ReasonAuth},
		"unexpected 502":           {err: wrap(docker.UnexpectedHTTPStatusError{StatusCode: 502}), want: ReasonNetwork},
		"non-json 404 body":        {err: wrap(errors.New(`StatusCode: 404, "<html>not found</html>"`)), want: ReasonNotFound},
		"too many requests":        {err: wrap(docker.ErrTooManyRequests), want: ReasonRateLimited},
		"errcode too many":         {err: wrap(errcode.ErrorCodeTooManyRequests), want: ReasonRateLimited},
		"deadline":                 {err: wrap(context.DeadlineExceeded), want: ReasonTimeout},
		"canceled":                 {err: wrap(context.Canceled), want: ReasonCanceled},
		"dial refused":             {err: wrap(&url.Error{Op: "Get", URL: "https://r.example/v2/", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}), want: ReasonNetwork},
		"dns":                      {err: wrap(&net.DNSError{Err: "no such host", Name: "r.example", IsNotFound: true}), want: ReasonNetwork},
		"dns timeout":              {err: wrap(&net.DNSError{Err: "timeout", Name: "r.example", IsTimeout: true}), want: ReasonTimeout},
		"untrusted certificate":    {err: wrap(x509.UnknownAuthorityError{}), want: ReasonNetwork},
		"unknown errcode":          {err: wrap(errcode.ErrorCodeUnknown), want: ReasonOther},
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
