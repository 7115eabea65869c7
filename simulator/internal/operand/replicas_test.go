package operand

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestControllerReplicas checks the standby as users deploy it: two
// controller processes of the binary, both with --leader-elect (the argument
// the operator renders), each with its own log; one replica runs without
// leader election; a standby in-process is refused.
func TestControllerReplicas(t *testing.T) {
	for name, tc := range map[string]struct {
		replicas    int
		binary      string
		wantErr     string
		wantElected bool
		wantLogs    []string
	}{
		"one replica, no leader election": {replicas: 1, binary: "/bin/archgate", wantLogs: []string{"controller.log"}},
		"a leader and a standby":          {replicas: 2, binary: "/bin/archgate", wantElected: true, wantLogs: []string{"controller.log", "controller-2.log"}},
		"a standby needs processes":       {replicas: 2, wantErr: "need the archgate binary"},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := New(Config{RestConfig: &rest.Config{}, Namespace: "ns", Binary: tc.binary, LogDir: "/logs",
				ControllerReplicas: tc.replicas})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var logs []string
			for _, p := range o.Controllers {
				logs = append(logs, strings.TrimPrefix(p.LogPath, "/logs/"))
				if got := slices.Contains(p.Command, "--leader-elect"); got != tc.wantElected {
					t.Errorf("%s: --leader-elect %v, want %v (command %v)", p.LogPath, got, tc.wantElected, p.Command)
				}
			}
			if !slices.Equal(logs, tc.wantLogs) {
				t.Errorf("controller logs %v, want %v", logs, tc.wantLogs)
			}
			if o.Controller != o.Controllers[0] {
				t.Error("Controller is not the first instance")
			}
		})
	}
}
