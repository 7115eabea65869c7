package operand

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestControllerArgs checks the one translation of the scenario's settings
// into the controller's flags: the cluster config's zeros (no cache, no
// retry) become the binary's negative values, and zero tunables are left to
// the binary's defaults.
func TestControllerArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want []string
	}{
		"cluster config zeros": {
			cfg:  Config{Namespace: "ns"},
			want: []string{"--operator-namespace", "ns", "--cache-size", "-1", "--max-retries", "-1"},
		},
		"everything set": {
			cfg: Config{Namespace: "ns", CacheSize: 100, MaxRetries: 3, CertsDir: "/c", InsecureRegistry: true, Workers: 8,
				CacheTTL: time.Minute, RetryBaseDelay: time.Second, GlobalPullSecret: &types.NamespacedName{Namespace: "a", Name: "b"}},
			want: []string{"--operator-namespace", "ns", "--cache-size", "100", "--max-retries", "3",
				"--global-pull-secret", "a/b", "--certs-dir", "/c", "--insecure-skip-tls-verify", "--workers", "8",
				"--cache-ttl", "1m0s", "--retry-base-delay", "1s"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := controllerArgs(controllerOptions(tc.cfg), tc.cfg.GlobalPullSecret)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if !slices.Equal(got, controllerArgs(controllerOptions(tc.cfg), tc.cfg.GlobalPullSecret)) {
				t.Error("the command line changes between calls")
			}
		})
	}
}
