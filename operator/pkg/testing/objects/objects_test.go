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

package objects_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/operator/internal/credentials"
	"github.com/archgate/archgate/operator/pkg/testing/objects"
)

// TestPullSecretParses checks that both forms of a built pull secret are what the
// operator's own parser reads as the given user and password.
func TestPullSecretParses(t *testing.T) {
	secret := objects.PullSecret("team", "pull").
		WithCredentials("reg.example", "alice", "pw-a").
		WithAuth("other.example", "bob", "pw-b").Build()
	cfg, err := credentials.ParseSecret(secret, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, e := range cfg.Entries {
		got[e.Pattern] = [2]string{e.Auth.Username, e.Auth.Password}
	}
	want := map[string][2]string{"reg.example": {"alice", "pw-a"}, "other.example": {"bob", "pw-b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestBuildCopies checks that a built object does not share state with its builder, so
// one builder can stand for several objects.
func TestBuildCopies(t *testing.T) {
	b := objects.Pod("team", "web").WithImage("a:1").WithGate()
	first := b.Build()
	first.Labels["changed"] = "yes"
	first.Spec.Containers[0].Image = "changed"
	second := b.WithImage("b:1").Build()
	if _, ok := second.Labels["changed"]; ok || second.Spec.Containers[0].Image != "a:1" {
		t.Errorf("a change to a built pod reached the builder: labels %v, first image %q", second.Labels, second.Spec.Containers[0].Image)
	}
	if got := []string{second.Spec.Containers[0].Name, second.Spec.Containers[1].Name}; !cmp.Equal(got, []string{"c0", "c1"}) {
		t.Errorf("container names %v, want [c0 c1]", got)
	}
}
