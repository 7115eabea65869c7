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

// Package testing_test holds the rule that keeps the test harness out of what archgate ships.
package testing_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const (
	module  = "github.com/archgate/archgate/operator"
	harness = module + "/pkg/testing"
	// Tests that drive the operator from outside; their packages have no production code.
	endToEnd = module + "/test"
)

// listedPackage is the part of `go list -json` output the rule reads. Imports lists the
// imports of the package's non-test files only; _test.go files may import the harness.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// TestOnlyTestsImportTheHarness fails when a production package of the operator module
// (anything shipped in the archgate binary or its image) imports a package under
// pkg/testing: only _test.go files and the harness itself may. The simulator and
// fakeregistry are harnesses of their own and are not checked.
func TestOnlyTestsImportTheHarness(t *testing.T) {
	// go list, not a hand-written import walk: it applies build constraints and knows
	// the module layout; the build tags are the Makefile's plus the test-only ones, so a
	// file behind a tag is checked too.
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports",
		"-tags=integration,e2e,containers_image_openpgp,containers_image_storage_stub,containers_image_docker_daemon_stub",
		module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	for _, p := range pkgs {
		if isHarness(p.ImportPath) {
			continue
		}
		for _, imp := range p.Imports {
			if isUnder(imp, harness) {
				t.Errorf("production package %s imports the test harness %s; only _test.go files and packages under %s may", p.ImportPath, imp, harness)
			}
		}
	}
}

func decode(out []byte) ([]listedPackage, error) {
	var pkgs []listedPackage
	for d := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

func isHarness(path string) bool { return isUnder(path, harness) || isUnder(path, endToEnd) }

func isUnder(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }
