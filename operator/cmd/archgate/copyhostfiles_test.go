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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/archgate/archgate/operator/internal/controller/operator"
)

// TestCopyHostFilesArgsParse: the init container's command line the operator renders is one
// the archgate binary accepts.
func TestCopyHostFilesArgsParse(t *testing.T) {
	parse(t, operator.CopyHostFilesArgs([]string{"/etc/kubernetes/azure.json", "/etc/kubernetes/custom-cloud.json"}))
}

// TestCopyHostFilesCmd runs `archgate copy-host-files` as the current user, giving the copy to
// itself, and its refusals of bad flags; hostfiles' tests cover the copying itself.
func TestCopyHostFilesCmd(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(from, "0"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := "--owner=" + strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	tests := map[string]struct {
		args      []string
		wantError string // "" for success
	}{
		"a file":           {args: []string{"--from-dir=" + from, "--to=" + to, owner, "--file=0=/etc/kubernetes/azure.json"}},
		"a missing file":   {args: []string{"--from-dir=" + from, "--to=" + to, owner, "--file=1=/etc/x.json"}, wantError: "host file /etc/x.json: open "},
		"no owner":         {args: []string{"--from-dir=" + from, "--to=" + to}, wantError: `required flag(s) "owner" not set`},
		"a named owner":    {args: []string{"--from-dir=" + from, "--to=" + to, "--owner=nonroot:nonroot"}, wantError: `--owner "nonroot:nonroot": want numeric uid:gid`},
		"a file sans name": {args: []string{"--from-dir=" + from, "--to=" + to, owner, "--file=/etc/x.json"}, wantError: `--file "/etc/x.json": want name=host-path`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := newRootCmd()
			root.SetArgs(append([]string{"copy-host-files"}, tc.args...))
			err := root.Execute()
			switch {
			case tc.wantError == "" && err != nil:
				t.Fatalf("copy-host-files: %v", err)
			case tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)):
				t.Fatalf("copy-host-files: error %v, want one containing %q", err, tc.wantError)
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(to, "0")); err != nil || string(data) != "{}" {
		t.Errorf("copy: %q, %v", data, err)
	}
}
