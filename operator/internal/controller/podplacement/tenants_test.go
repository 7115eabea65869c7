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

// TestTenantSlots checks that a namespace holds at most its share while another goes on (the
// counting itself is limits.Keyed's, tested there) and the wait of a pod over its share.
func TestTenantSlots(t *testing.T) {
	s := newTenantSlots(1)
	if !s.acquire("attacker") || s.acquire("attacker") || !s.acquire("team-a") {
		t.Fatal("a namespace's share of 1 not kept, or another namespace refused")
	}
	s.release("attacker")
	s.release("team-a")
	if n := s.byNamespace.Held(); n != 0 {
		t.Errorf("%d namespaces still counted after every release", n)
	}
	if d := s.wait(); d < tenantWait || d >= 2*tenantWait {
		t.Errorf("wait %s, want within [%s, %s)", d, tenantWait, 2*tenantWait)
	}
}
