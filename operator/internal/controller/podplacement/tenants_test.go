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

import "testing"

// TestTenantSlots checks that a namespace holds at most its share, that other namespaces are
// not affected by it, and that a released worker can be taken again.
func TestTenantSlots(t *testing.T) {
	s := newTenantSlots(2)
	steps := []struct {
		op, ns string
		want   bool
	}{
		{"acquire", "attacker", true},
		{"acquire", "attacker", true},
		{"acquire", "attacker", false}, // its share is held
		{"acquire", "team-a", true},    // another namespace goes on
		{"acquire", "team-a", true},
		{"acquire", "team-a", false},
		{"release", "attacker", true},
		{"acquire", "attacker", true}, // the released worker is free again
		{"acquire", "attacker", false},
	}
	for i, st := range steps {
		if st.op == "release" {
			s.release(st.ns)
			continue
		}
		if got := s.acquire(st.ns); got != st.want {
			t.Fatalf("step %d: acquire(%s) = %v, want %v", i, st.ns, got, st.want)
		}
	}
	for _, ns := range []string{"attacker", "attacker", "team-a", "team-a"} {
		s.release(ns)
	}
	if len(s.inUse) != 0 {
		t.Errorf("namespaces still counted after every release: %v", s.inUse)
	}
	if d := s.wait(); d < tenantWait || d >= 2*tenantWait {
		t.Errorf("wait %s, want within [%s, %s)", d, tenantWait, 2*tenantWait)
	}
}
