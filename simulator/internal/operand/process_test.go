package operand

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestScraperAuthenticates checks that the scraper reads an HTTPS metrics endpoint the way the
// archgate components want it read (their CA, a bearer token) and reads nothing otherwise.
func TestScraperAuthenticates(t *testing.T) {
	const token = "reader-token"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("# TYPE archgate_webhook_pods_gated_total counter\narchgate_webhook_pods_gated_total 3\n"))
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, tc := range []struct {
		name string
		auth *MetricsAuth
		want int // metric families read
	}{
		{"token and CA", &MetricsAuth{Token: token, CA: ca}, 1},
		{"wrong token", &MetricsAuth{Token: "other", CA: ca}, 0},
		{"no token", nil, 0},
		{"server not trusted", &MetricsAuth{Token: token}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(newScraper(srv.URL+"/metrics", tc.auth).gather()); got != tc.want {
				t.Errorf("read %d metric families, want %d", got, tc.want)
			}
		})
	}
}
