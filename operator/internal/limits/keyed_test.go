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

package limits

import "testing"

// TestKeyed checks that a key holds at most its limit (or a tighter one a caller asks for),
// that other keys are not affected by it, that a released place can be taken again, and that
// released keys are forgotten.
func TestKeyed(t *testing.T) {
	k := NewKeyed[string](2)
	steps := []struct {
		op, key string
		upTo    int // a tighter limit asked for; 0 for the key's own
		want    bool
	}{
		{"acquire", "attacker", 0, true},
		{"acquire", "attacker", 1, false}, // the tighter limit is held
		{"acquire", "attacker", 3, true},  // a looser one is still bounded by the key's own
		{"acquire", "attacker", 3, false},
		{"acquire", "attacker", 0, false}, // its limit is held
		{"acquire", "team-a", 0, true},    // another key goes on
		{"acquire", "team-a", 0, true},
		{"acquire", "team-a", 0, false},
		{"release", "attacker", 0, true},
		{"acquire", "attacker", 0, true}, // the released place is free again
		{"acquire", "attacker", 0, false},
	}
	for i, st := range steps {
		if st.op == "release" {
			k.Release(st.key)
			continue
		}
		var got bool
		if st.upTo > 0 {
			got = k.TryAcquireUpTo(st.key, st.upTo)
		} else {
			got = k.TryAcquire(st.key)
		}
		if got != st.want {
			t.Fatalf("step %d: acquiring %s (up to %d) = %v, want %v", i, st.key, st.upTo, got, st.want)
		}
	}
	if n := k.InUse("attacker"); n != 2 {
		t.Errorf("InUse(attacker) = %d, want 2", n)
	}
	for _, key := range []string{"attacker", "attacker", "team-a", "team-a"} {
		k.Release(key)
	}
	if n := k.Held(); n != 0 {
		t.Errorf("%d keys still held after every release", n)
	}
}
