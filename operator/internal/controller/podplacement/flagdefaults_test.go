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
	"cmp"
	"strings"
	"testing"

	"github.com/archgate/archgate/operator/internal/cmdline"
)

// withFlagDefaults sets the options New requires that a test leaves zero to the controller's flag
// defaults, which pkg/components applies in production.
func withFlagDefaults(o Options) Options {
	o.Workers = cmp.Or(o.Workers, cmdline.DefaultWorkers)
	o.InspectWorkers = cmp.Or(o.InspectWorkers, cmdline.DefaultInspectWorkers)
	o.RetryBaseDelay = cmp.Or(o.RetryBaseDelay, cmdline.DefaultRetryBaseDelay)
	o.RetryMaxDelay = cmp.Or(o.RetryMaxDelay, cmdline.DefaultRetryMaxDelay)
	return o
}

// TestNewRequiresWorkersAndDelays: the controller has no defaults of its own for what its
// flags default (package cmdline); zero is a caller's bug, refused.
func TestNewRequiresWorkersAndDelays(t *testing.T) {
	_, err := New(Options{Inspector: &fakeInspector{}})
	want := "podplacement: Options.Workers (0), InspectWorkers (0), RetryBaseDelay (0s) and RetryMaxDelay (0s) must be positive"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %s", err, want)
	}
	if _, err := New(withFlagDefaults(Options{Inspector: &fakeInspector{}})); err != nil {
		t.Errorf("with the flag defaults: %v", err)
	}
}
