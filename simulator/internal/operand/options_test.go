package operand

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/pkg/components"
)

// TestControllerArgs checks the translation of the scenario's settings into
// the controller's command line: the resolved image inspection settings as
// the operator renders them (zero means zero), zero tunables left to the
// binary's defaults, in a stable order.
func TestControllerArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want []string
	}{
		"cluster config zeros": {
			cfg: Config{Namespace: "ns"},
			want: []string{"controller", "--operator-namespace=ns", "--cache-size=0", "--cache-ttl=0s", "--inspect-timeout=0s",
				"--max-retries=0", "--failure-cache-ttl=0s", "--max-gate-age=0s", "--max-images-per-pod=0", "--blocked-networks=", "--allowed-registries="},
		},
		"everything set": {
			cfg: Config{Namespace: "ns", CertsDir: "/c", InsecureRegistry: true, Workers: 8, RetryBaseDelay: time.Second,
				ImageInspection: v1beta1.ImageInspectionSettings{CacheSize: 100, CacheTTL: time.Minute, Timeout: 5 * time.Second, MaxRetries: 3,
					MaxGateAge: 90 * time.Second},
				GlobalPullSecret: &types.NamespacedName{Namespace: "a", Name: "b"}},
			want: []string{"controller", "--operator-namespace=ns", "--global-pull-secret=a/b", "--certs-dir=/c", "--insecure-skip-tls-verify",
				"--cache-size=100", "--cache-ttl=1m0s", "--inspect-timeout=5s", "--max-retries=3", "--failure-cache-ttl=0s", "--max-gate-age=1m30s",
				"--max-images-per-pod=0", "--blocked-networks=", "--allowed-registries=", "--workers=8", "--retry-base-delay=1s"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := func() []string { return components.ControllerArgs(components.Process{}, controllerOptions(tc.cfg)) }
			got := args()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if !slices.Equal(got, args()) {
				t.Error("the command line changes between calls")
			}
		})
	}
}
