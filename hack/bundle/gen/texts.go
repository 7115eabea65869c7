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

package main

import (
	"encoding/base64"
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
)

// parseVersion parses the release version the CSV is named and versioned by.
func parseVersion(v string) (version.OperatorVersion, error) {
	sv, err := semver.Parse(v)
	if err != nil {
		return version.OperatorVersion{}, fmt.Errorf("VERSION %q is not a semantic version: %w", v, err)
	}
	return version.OperatorVersion{Version: sv}, nil
}

// iconSVG is the icon OperatorHub shows: a plain mark, written here because the project has
// no artwork to generate it from.
var iconSVG = base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">` +
	`<rect width="64" height="64" rx="8" fill="#2b5797"/>` +
	`<path d="M12 48 32 14 52 48Z" fill="none" stroke="#fff" stroke-width="5"/></svg>`))

// description is the CSV's long description (Markdown, shown on the OperatorHub page).
const description = `archgate places pods on nodes whose CPU architecture their images support, in clusters that
mix amd64, arm64, ppc64le and s390x nodes.

A mutating webhook adds a scheduling gate to new pods; the pod placement controller inspects
every image of a gated pod in its registry (honouring the cluster's mirrors, certificates and
pull secrets), merges a ` + "`kubernetes.io/arch`" + ` requirement into the pod's node affinity, adds
preferred per-architecture weights, and removes the gate in the same write.

After installing, create the ClusterPodPlacementConfig named ` + "`cluster`" + ` to turn placement on;
PodPlacementConfigs add per-namespace architecture preferences.

The ValidatingAdmissionPolicies of the kustomize install are not part of this bundle (OLM does
not carry that kind): apply deploy/base/admission-policies.yaml from archgate's repository to add them.`
