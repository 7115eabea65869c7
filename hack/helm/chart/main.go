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

// Command chart keeps archgate's Helm chart (deploy/helm/archgate) generated from the kustomize
// manifests in deploy/, so that the two cannot drift: `chart generate` writes the chart's CRDs,
// templates and values from `kustomize build` of deploy/overlays/kubernetes (and the
// monitoring objects from deploy/overlays/monitoring), turning the fields a Helm user sets
// (namespace, image, replicas, resources, scheduling, certificate provider, monitoring) into
// template expressions whose defaults are the manifests' values. The package's test renders the
// chart with helm for every overlay and compares it with kustomize's output, object by object.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "generate" {
		fmt.Fprintln(os.Stderr, "usage: chart generate REPO_ROOT")
		os.Exit(2)
	}
	if err := generate(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}
