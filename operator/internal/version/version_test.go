/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package version

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResolve(t *testing.T) {
	vcs := func() string { return "abc123-dirty" }
	for _, tc := range []struct {
		name, version, commit   string
		wantVersion, wantCommit string
	}{
		{name: "stamped by the linker", version: "0.1.0", commit: "0123456789abcdef", wantVersion: "0.1.0", wantCommit: "0123456789abcdef"},
		{name: "go build with its VCS stamp", wantVersion: Dev, wantCommit: "abc123-dirty"},
		{name: "version stamped, commit from VCS", version: "1.2.3-rc.1", wantVersion: "1.2.3-rc.1", wantCommit: "abc123-dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.version, tc.commit, vcs)
			if got.Version != tc.wantVersion || got.Commit != tc.wantCommit {
				t.Errorf("resolve(%q, %q) = %s; want version %s, commit %s", tc.version, tc.commit, got, tc.wantVersion, tc.wantCommit)
			}
			if got.GoVersion == "" || !strings.Contains(got.Platform, "/") {
				t.Errorf("resolve(%q, %q) = %+v: Go version and os/arch missing", tc.version, tc.commit, got)
			}
		})
	}
}

func TestCollector(t *testing.T) {
	i := Info{Version: "0.1.0", Commit: "abc", GoVersion: "go1.26.0", Platform: "linux/amd64"}
	reg := prometheus.NewPedanticRegistry()
	// Two components in one process (the simulator's in-process mode) register side by side.
	for _, c := range []string{"webhook", "controller"} {
		if err := reg.Register(i.Collector(c)); err != nil {
			t.Fatalf("registering the %s's build info: %v", c, err)
		}
	}
	want := `
# HELP archgate_build_info Always 1; labelled with the archgate version, commit and Go version of the component's binary.
# TYPE archgate_build_info gauge
archgate_build_info{commit="abc",component="controller",goversion="go1.26.0",version="0.1.0"} 1
archgate_build_info{commit="abc",component="webhook",goversion="go1.26.0",version="0.1.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), BuildInfoMetric); err != nil {
		t.Error(err)
	}
}
