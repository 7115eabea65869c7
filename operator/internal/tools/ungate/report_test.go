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

package ungate

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

func TestRunPrintsWhatItDoes(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(objects.Pod("team-a", "web-1").WithGate().Build(), objects.Pod("team-b", "web-2").WithGate().Build()).Build()
	var out strings.Builder
	if _, err := Run(context.Background(), c, podplacement.ReleaseOptions{Namespace: "team-a", DryRun: true}, &out); err != nil {
		t.Fatal(err)
	}
	want := "would release team-a/web-1\n" +
		"dry run: 1 pods gated by archgate in namespace team-a would be released (gate removed, affinity unchanged); nothing changed. Run again with --dry-run=none.\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("dry-run output (-want +got):\n%s", diff)
	}
	out.Reset()
	if _, err := Run(context.Background(), c, podplacement.ReleaseOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 pods gated by archgate in every namespace: 2 released, 0 already released, 0 failed.") {
		t.Errorf("output:\n%s", out.String())
	}
}
