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

package podplacement

import (
	"testing"

	"github.com/archgate/archgate/operator/internal/inspect"
)

func TestDescribeArchitectures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []ImageResult
		want    string
	}{
		{"linux architectures, sorted", []ImageResult{{Image: "a:1", Result: inspect.Result{Architectures: []string{"s390x", "arm64"}}}}, "a:1 [arm64 s390x]"},
		{"no binaries", []ImageResult{{Image: "b:1", Result: inspect.Result{AnyArchitecture: true}}}, "b:1 [any]"},
		{"windows only: its platforms", []ImageResult{
			{Image: "a:1", Result: inspect.Result{Architectures: []string{"amd64"}, Platforms: []string{"linux/amd64"}}},
			{Image: "w:1", Result: inspect.Result{Architectures: []string{}, Platforms: []string{"windows/amd64"}}}},
			"a:1 [amd64], w:1 [windows/amd64]"},
		{"nothing known", []ImageResult{{Image: "x:1", Result: inspect.Result{Architectures: []string{}}}}, "x:1 [none]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeArchitectures(tc.results); got != tc.want {
				t.Errorf("describeArchitectures = %q, want %q", got, tc.want)
			}
		})
	}
}
