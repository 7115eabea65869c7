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
	"math/rand/v2"
	"time"

	"github.com/archgate/archgate/operator/internal/limits"
)

// tenantWait is how long a pod whose namespace holds all its workers waits before it asks
// again, with up to as much jitter so that a namespace's waiting pods do not return at once.
// It is short: another pod of the namespace frees a worker as soon as its registry answers.
const tenantWait = 250 * time.Millisecond

// tenantSlots bounds how many pods of one namespace the controller works on at once, so that
// a namespace whose images hang (a registry that never answers holds a worker up to the
// inspection timeout) cannot hold every worker while other namespaces' pods wait. A pod over
// its namespace's share is requeued, not failed: it costs no retry. Safe for concurrent use.
type tenantSlots struct{ byNamespace *limits.Keyed[string] }

func newTenantSlots(limit int) *tenantSlots {
	return &tenantSlots{byNamespace: limits.NewKeyed[string](limit)}
}

// acquire takes a worker for a pod of namespace ns; false when the namespace holds its share.
func (t *tenantSlots) acquire(ns string) bool { return t.byNamespace.TryAcquire(ns) }

// release returns a worker acquire gave.
func (t *tenantSlots) release(ns string) { t.byNamespace.Release(ns) }

// wait is the requeue delay of a pod over its namespace's share.
func (t *tenantSlots) wait() time.Duration {
	return tenantWait + rand.N(tenantWait)
}
