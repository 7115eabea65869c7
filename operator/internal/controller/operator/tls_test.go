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

package operator

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewCertLoopDefaults(t *testing.T) {
	tests := map[string]struct {
		interval, retry         time.Duration
		wantInterval, wantRetry time.Duration
	}{
		"zero takes the defaults":     {wantInterval: time.Hour, wantRetry: 30 * time.Second},
		"negative takes the defaults": {interval: -time.Second, retry: -time.Second, wantInterval: time.Hour, wantRetry: 30 * time.Second},
		"set is kept":                 {interval: 5 * time.Minute, retry: time.Second, wantInterval: 5 * time.Minute, wantRetry: time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := newCertLoop("test", nil, tc.interval, tc.retry)
			got := []time.Duration{l.interval, l.retry}
			if diff := cmp.Diff([]time.Duration{tc.wantInterval, tc.wantRetry}, got); diff != "" {
				t.Errorf("interval, retry (-want +got):\n%s", diff)
			}
		})
	}
}

// Both certificate runnables get their leader-only Start from certLoop.
func TestCertLoopStartRunsEnsureOnTheLeader(t *testing.T) {
	for name, r := range map[string]interface {
		Start(context.Context) error
		NeedLeaderElection() bool
	}{
		"webhook": NewWebhookTLS(nil, nil, WebhookTLSOptions{}),
		"metrics": NewMetricsTLS(nil, MetricsTLSOptions{}),
	} {
		t.Run(name, func(t *testing.T) {
			if !r.NeedLeaderElection() {
				t.Error("NeedLeaderElection is false, want true")
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	l := newCertLoop("test", func(context.Context) (time.Duration, error) {
		calls++
		cancel()
		return 0, nil
	}, 0, 0)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("ensure ran %d times before the context ended, want 1", calls)
	}
}
