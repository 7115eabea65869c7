package runner

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/archgate/archgate/fakeregistry"
)

// TestFaultWindowEffect runs a registry outage window on a real fake
// registry: with no request during the window it has no observable effect
// (the run must fail), with one it reports the fault injected.
func TestFaultWindowEffect(t *testing.T) {
	for name, tc := range map[string]struct {
		requests   int
		wantEffect string
		wantErr    string
	}{
		"an outage no request meets":  {wantErr: "the registry injected no fault during the window"},
		"an outage two requests meet": {requests: 2, wantEffect: "2 faults injected"},
	} {
		t.Run(name, func(t *testing.T) {
			reg, err := fakeregistry.Start(t.Context(), fakeregistry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			e := &fakeRegistry{reg: reg}
			f := fakeregistry.Faults{Outage: fakeregistry.OutageUnavailable}
			st := e.faultWindow(f, 0, fakeregistry.FaultOutage)
			if err := st.apply(context.Background()); err != nil {
				t.Fatal(err)
			}
			for range tc.requests {
				resp, err := http.Get(reg.URL() + "/v2/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("GET /v2/ during the outage: %s, want 503", resp.Status)
				}
			}
			if err := st.revert(context.Background()); err != nil {
				t.Fatal(err)
			}
			effect, err := st.effect()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("effect %q, error %v; want an error containing %q", effect, err, tc.wantErr)
				}
				return
			}
			if err != nil || effect != tc.wantEffect {
				t.Errorf("effect %q, error %v; want %q", effect, err, tc.wantEffect)
			}
		})
	}
}
