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

// Package limits bounds how much of a shared resource each tenant of it holds at once.
package limits

import "sync"

// Keyed bounds, per key, how many holders there are at once: TryAcquire fails at once when the
// key holds its limit, rather than waiting (a waiting worker would be held just as a stuck one
// is). x/sync's semaphore and client-go's workqueue have no per-key bound that fails fast,
// hence this small counter; only the keys held are kept, so its memory is bounded by the
// holders. Safe for concurrent use.
type Keyed[K comparable] struct {
	limit int
	mu    sync.Mutex
	inUse map[K]int
}

// NewKeyed returns a counter allowing limit holders per key.
func NewKeyed[K comparable](limit int) *Keyed[K] {
	return &Keyed[K]{limit: limit, inUse: map[K]int{}}
}

// Limit is the holders allowed per key.
func (k *Keyed[K]) Limit() int { return k.limit }

// TryAcquire takes a place for key; false when key holds its limit.
func (k *Keyed[K]) TryAcquire(key K) bool { return k.TryAcquireUpTo(key, k.limit) }

// TryAcquireUpTo takes a place for key when it holds fewer than limit (and its own limit):
// a caller that tightens a key's bound at times (a share enforced only under contention) keeps
// the check and the count in one step.
func (k *Keyed[K]) TryAcquireUpTo(key K, limit int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inUse[key] >= min(limit, k.limit) {
		return false
	}
	k.inUse[key]++
	return true
}

// InUse is the number of places key holds.
func (k *Keyed[K]) InUse(key K) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.inUse[key]
}

// Release gives back a place TryAcquire took.
func (k *Keyed[K]) Release(key K) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inUse[key]--; k.inUse[key] <= 0 {
		delete(k.inUse, key) // only the keys held are kept
	}
}

// Held is the number of keys with a place taken.
func (k *Keyed[K]) Held() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.inUse)
}
