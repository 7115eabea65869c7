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

// Command gen keeps archgate's OLM bundle (bundle/) generated from the kustomize manifests in
// deploy/, so that an OperatorHub install and a kustomize install cannot drift: `gen generate`
// builds deploy/overlays/openshift with the kustomize library and translates it into a
// ClusterServiceVersion (the Deployment, ServiceAccount and bound RBAC become its install
// strategy, the validating webhooks its webhookdefinitions, the CRDs its owned APIs), the
// CRDs and the other objects a bundle may carry, and metadata/annotations.yaml. The package's
// test runs the operator framework's validators over the committed bundle.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "generate" {
		fmt.Fprintln(os.Stderr, "usage: gen generate REPO_ROOT (VERSION, IMG and IMG_DIGEST from the environment)")
		os.Exit(2)
	}
	opts := Options{
		Version: os.Getenv("VERSION"),
		Image:   os.Getenv("IMG"),
		Out:     os.Getenv("BUNDLE_DIR"),
	}
	if err := generate(os.Args[2], opts); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}
