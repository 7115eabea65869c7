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

package settings

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// TestImageInspectionArgsRoundTrip: what the operator renders is what the binary parses.
func TestImageInspectionArgsRoundTrip(t *testing.T) {
	tests := map[string]v1beta1.ImageInspectionSettings{
		"defaults":                v1beta1.DefaultImageInspectionSettings(),
		"no cache, no retry":      {CacheSize: 0, CacheTTL: time.Second, Timeout: time.Second, MaxRetries: 0},
		"fractional durations":    {CacheSize: 7, CacheTTL: 1500 * time.Millisecond, Timeout: 90 * time.Second, MaxRetries: 20},
		"upper bounds of the API": {CacheSize: 1_000_000, CacheTTL: 24 * time.Hour, Timeout: 5 * time.Minute, MaxRetries: 20},
		"blocked networks":        {CacheTTL: time.Second, Timeout: time.Second, BlockedNetworks: []string{"169.254.0.0/16", "fd00::/8"}},
		"allowed registries":      {CacheTTL: time.Second, Timeout: time.Second, AllowedRegistries: []string{"quay.io", "*.corp.example", "reg.example:5000"}},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
			var got v1beta1.ImageInspectionSettings
			BindImageInspectionFlags(fs, &got)
			if err := fs.Parse(ImageInspectionArgs(want)); err != nil {
				t.Fatal(err)
			}
			// No blocked network renders as an empty list: nil and empty mean the same.
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parsed settings (-rendered +parsed):\n%s", diff)
			}
		})
	}
}

// TestBindImageInspectionFlagsDefaults: without arguments the binary runs with the API's defaults.
func TestBindImageInspectionFlagsDefaults(t *testing.T) {
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	var got v1beta1.ImageInspectionSettings
	BindImageInspectionFlags(fs, &got)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1beta1.DefaultImageInspectionSettings(), got); diff != "" {
		t.Errorf("flag defaults (-api +flags):\n%s", diff)
	}
}
