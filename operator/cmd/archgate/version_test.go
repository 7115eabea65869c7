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
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/archgate/archgate/operator/internal/version"
)

func TestVersionCommand(t *testing.T) {
	for _, tc := range []struct {
		output string
		decode func([]byte, any) error
	}{
		{output: "json", decode: json.Unmarshal},
		{output: "yaml", decode: func(b []byte, v any) error { return yaml.Unmarshal(b, v) }},
	} {
		root := newRootCmd()
		out := new(strings.Builder)
		root.SetArgs([]string{"version", "-o", tc.output})
		root.SetOut(out)
		if err := root.Execute(); err != nil {
			t.Fatalf("archgate version -o %s: %v", tc.output, err)
		}
		var got version.Info
		if err := tc.decode([]byte(out.String()), &got); err != nil {
			t.Fatalf("archgate version -o %s printed %q: %v", tc.output, out, err)
		}
		if got != version.Get() {
			t.Errorf("archgate version -o %s = %+v; want %+v", tc.output, got, version.Get())
		}
	}
	root := newRootCmd()
	out := new(strings.Builder)
	root.SetArgs([]string{"version"})
	root.SetOut(out)
	if err := root.Execute(); err != nil || !strings.HasPrefix(out.String(), "archgate "+version.Dev+" (commit ") {
		t.Errorf("archgate version: %q, %v", out, err)
	}
	root = newRootCmd()
	root.SetArgs([]string{"version", "-o", "xml"})
	root.SetOut(new(strings.Builder))
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `--output "xml": want json or yaml`) {
		t.Errorf("archgate version -o xml: %v", err)
	}
}
