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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// dueTolerance is how close to its scheduled time an attempt may run: a requeue never fires
// early, but both sides read the clock at slightly different moments.
const dueTolerance = time.Millisecond

// retryTracker is the per-pod exponential backoff of failed inspections. It is keyed by pod UID,
// so that a pod recreated under the same name starts afresh, and it remembers when each pod's
// next attempt is due: a pod event that arrives before that time (the pod's own updates, a
// label change) must not trigger an early inspection, or a registry blip would burn the whole
// retry budget in milliseconds. Safe for concurrent use.
type retryTracker struct {
	mu      sync.Mutex
	limiter workqueue.TypedRateLimiter[types.UID]
	clock   clock.PassiveClock
	next    map[types.UID]time.Time
}

func newRetryTracker(base, maxDelay time.Duration, clk clock.PassiveClock) *retryTracker {
	return &retryTracker{
		limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](base, maxDelay),
		clock:   clk,
		next:    map[types.UID]time.Time{},
	}
}

// Remaining returns how long until the pod's next attempt is due, 0 when it is due now or no
// retry is scheduled.
func (t *retryTracker) Remaining(uid types.UID) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	next, ok := t.next[uid]
	if !ok {
		return 0
	}
	if d := next.Sub(t.clock.Now()); d > dueTolerance {
		return d
	}
	return 0
}

// Failed records a failed attempt. While fewer than budget retries were made it schedules the
// next one and returns its delay (base·2^retries, capped); once budget retries were made it
// returns exhausted and schedules nothing. A budget of 0 is exhausted at the first failure.
func (t *retryTracker) Failed(uid types.UID, budget int) (delay time.Duration, exhausted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limiter.NumRequeues(uid) >= budget {
		delete(t.next, uid)
		return 0, true
	}
	delay = t.limiter.When(uid)
	t.next[uid] = t.clock.Now().Add(delay)
	return delay, false
}

// Retries returns how many retries were scheduled for the pod so far.
func (t *retryTracker) Retries(uid types.UID) int {
	return t.limiter.NumRequeues(uid)
}

// Forget drops what is known about the pod: after its gate was removed, or when it is gone.
func (t *retryTracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limiter.Forget(uid)
	delete(t.next, uid)
}

// Len returns the number of pods with a failure record.
func (t *retryTracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.next)
}
