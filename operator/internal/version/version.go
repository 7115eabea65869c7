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

// Package version is archgate's build identity: the release version and commit stamped into
// the binary at link time, and the Go toolchain and platform it was built for. Every
// component logs it at start, exports it as archgate_build_info, and the operator writes it
// into the ClusterPodPlacementConfig's status.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// The release version and commit, set by the linker (the Makefile's and hack/image.sh's
// -ldflags):
//
//	-X github.com/archgate/archgate/operator/internal/version.version=0.1.0
//	-X github.com/archgate/archgate/operator/internal/version.commit=<git sha>
//
// They are variables only because -X can set nothing else; nothing assigns them at run time.
var (
	version string
	commit  string
)

// Dev is the version of a binary built without a stamp (go build, go test, go run).
const Dev = "0.0.0-dev"

// Info identifies a build.
type Info struct {
	// Version is the release version (semantic versioning, without a leading v), or Dev.
	Version string `json:"version"`
	// Commit is the git commit the binary was built from, with "-dirty" when the work tree
	// had changes; "unknown" when neither the linker nor Go's VCS stamp says.
	Commit string `json:"commit"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is the binary's os/arch.
	Platform string `json:"platform"`
}

// Get returns the running binary's build identity.
func Get() Info {
	return resolve(version, commit, vcsRevision)
}

// resolve fills what the linker left unset: Dev for the version, Go's VCS stamp (present when
// built with -buildvcs) for the commit.
func resolve(stampedVersion, stampedCommit string, vcs func() string) Info {
	i := Info{Version: stampedVersion, Commit: stampedCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Version == "" {
		i.Version = Dev
	}
	if i.Commit == "" {
		i.Commit = vcs()
	}
	return i
}

// vcsRevision is the commit of Go's own VCS stamp, "unknown" without one.
func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// String is the one line `archgate version` prints.
func (i Info) String() string {
	return fmt.Sprintf("archgate %s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}

// KeysAndValues are the build's identity as logr key/value pairs.
func (i Info) KeysAndValues() []any {
	return []any{"version", i.Version, "commit", i.Commit, "goVersion", i.GoVersion, "platform", i.Platform}
}

// BuildInfoMetric is the name of the gauge Collector exports.
const BuildInfoMetric = "archgate_build_info"

// Collector returns archgate_build_info for component: a gauge that is always 1, labelled with
// the build's identity, so that a query can tell which version each replica runs (count by
// version) or join any other metric with it.
func (i Info) Collector(component string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: BuildInfoMetric,
		Help: "Always 1; labelled with the archgate version, commit and Go version of the component's binary.",
		ConstLabels: prometheus.Labels{
			"component": component, "version": i.Version, "commit": i.Commit, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
