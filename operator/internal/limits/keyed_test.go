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

// TestKeyed checks that a key holds at most its limit, that other keys are not affected by it,
// that a released place can be taken again, and that released keys are forgotten.
func TestKeyed(t *testing.T) {
	k := NewKeyed[string](2)
	steps := []struct {
		op, key string
		want    bool
	}{
		{"acquire", "attacker", true},
		{"acquire", "attacker", true},
		{"acquire", "attacker", false}, // its limit is held
		{"acquire", "team-a", true},    // another key goes on
		{"acquire", "team-a", true},
		{"acquire", "team-a", false},
		{"release", "attacker", true},
		{"acquire", "attacker", true}, // the released place is free again
		{"acquire", "attacker", false},
	}
	for i, st := range steps {
		if st.op == "release" {
			k.Release(st.key)
			continue
		}
		if got := k.TryAcquire(st.key); got != st.want {
			t.Fatalf("step %d: TryAcquire(%s) = %v, want %v", i, st.key, got, st.want)
		}
	}
	for _, key := range []string{"attacker", "attacker", "team-a", "team-a"} {
		k.Release(key)
	}
	if n := k.Held(); n != 0 {
		t.Errorf("%d keys still held after every release", n)
	}
}
