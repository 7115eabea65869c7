package components

import (
	"crypto/tls"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTLSOptsHTTP2 checks that the webhook and metrics servers offer only HTTP/1.1 unless
// HTTP/2 is asked for: over HTTP/2 the apiserver would send every admission to one replica.
func TestTLSOptsHTTP2(t *testing.T) {
	for name, tc := range map[string]struct {
		enable    bool
		wantProto []string
	}{
		"default: HTTP/1.1 only":                              {wantProto: []string{"http/1.1"}},
		"asked for: the server's own choice, HTTP/2 included": {enable: true},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := &tls.Config{}
			for _, o := range (Common{EnableHTTP2: tc.enable}).tlsOpts() {
				o(cfg)
			}
			if diff := cmp.Diff(tc.wantProto, cfg.NextProtos); diff != "" {
				t.Errorf("NextProtos (-want +got):\n%s", diff)
			}
			if got := (Common{EnableHTTP2: tc.enable}).metricsServerOptions().TLSOpts; len(got) != len((Common{EnableHTTP2: tc.enable}).tlsOpts()) {
				t.Errorf("the metrics server has %d TLS options, want the component's", len(got))
			}
		})
	}
}
