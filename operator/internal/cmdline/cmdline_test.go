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

package cmdline

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline/fieldpath"
)

// commonSamples are a value of each field of Common other than its flag's default.
func commonSamples(prefix string) map[string]any {
	return map[string]any{
		prefix + "QPS": float32(12.5), prefix + "Burst": 7, prefix + "MetricsBindAddress": "127.0.0.1:1",
		prefix + "HealthProbeBindAddress": "127.0.0.1:2", prefix + "MetricsCertDir": "/m", prefix + "PprofBindAddress": "127.0.0.1:3",
		prefix + "EnableHTTP2": true,
	}
}

// TestRoundTrip: for every field of every options struct, a value other than the default is
// rendered and parsed back unchanged. A field the table has no value for fails the test, so a
// new field cannot be rendered by the operator and lost by the binary (or the reverse).
func TestRoundTrip(t *testing.T) {
	t.Run("Global", func(t *testing.T) {
		roundTrip(t, BindGlobal, Global.Args, map[string]any{"Kubeconfig": "/k", "Context": "c", "LogVerbosity": v1beta1.LogVerbosityTrace})
	})
	t.Run("Common", func(t *testing.T) { roundTrip(t, BindCommon, Common.Args, commonSamples("")) })
	t.Run("Webhook", func(t *testing.T) {
		samples := map[string]any{"Namespace": "team", "OperatorNamespace": "op", "KnownImagesConfigMap": "known", "Host": "127.0.0.1",
			"CertDir": "/certs", "Port": 1234, "MaxImagesPerPod": 12}
		maps.Copy(samples, commonSamples("Common."))
		roundTrip(t, BindWebhook, Webhook.Args, samples)
	})
	t.Run("Controller", func(t *testing.T) {
		samples := map[string]any{"Namespace": "team", "OperatorNamespace": "op", "KnownImagesConfigMap": "known",
			"LeaderElection": true, "LeaderElectionNamespace": "lease-ns", "LeaderElectionID": "lease",
			"GlobalPullSecret": &types.NamespacedName{Namespace: "a", Name: "b"}, "CABundleFile": "/ca", "RegistriesConfPath": "/r",
			"RegistriesConfDirPath": "/r.d", "AuthFilePath": "/auth", "CertsDir": "/certs.d", "CredentialProviderConfig": "/cp.yaml",
			"CredentialProviderBinDir": "/cp", "InsecureSkipTLSVerify": true,
			"ImageInspection.CacheSize": 0, "ImageInspection.CacheTTL": 90 * time.Second, "ImageInspection.Timeout": 1500 * time.Millisecond,
			"ImageInspection.MaxRetries": 0, "ImageInspection.FailureCacheTTL": time.Duration(0), "ImageInspection.MaxGateAge": 2 * time.Hour,
			"ImageInspection.MaxImagesPerPod": 1000, "ImageInspection.BlockedNetworks": []string{"fd00::/8"},
			"ImageInspection.AllowedRegistries": []string{"quay.io", "*.corp.example", "reg.example:5000"},
			"ExecFormatErrorMonitor":            true, "ExecFormatErrorDeleteInterval": 15 * time.Minute, "PlacementParametersConfigMap": "params",
			"Workers": 3, "InspectWorkers": 5, "NamespaceWorkers": 1, "RetryBaseDelay": time.Second, "RetryMaxDelay": time.Minute}
		maps.Copy(samples, commonSamples("Common."))
		roundTrip(t, BindController, Controller.Args, samples)
	})
}

// roundTrip checks every leaf field of O (structs and pointers to structs are walked into
// unless samples names them) against samples.
func roundTrip[O any](t *testing.T, bind func(*pflag.FlagSet, *O), render func(O) []string, samples map[string]any) {
	t.Helper()
	defaults := parse(t, bind, nil)
	if diff := cmp.Diff(defaults, parse(t, bind, render(*new(O))), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("a zero struct does not parse to the defaults (-defaults +parsed):\n%s", diff)
	}
	leaves := fieldpath.Leaves(reflect.TypeFor[O](), func(path string) bool { _, ok := samples[path]; return ok })
	for _, path := range leaves {
		sample, ok := samples[path]
		if !ok {
			t.Errorf("%s has no value in the round trip: add one (and its flag, if it has none)", path)
			continue
		}
		want := parse(t, bind, nil)
		v := fieldpath.At(reflect.ValueOf(&want).Elem(), path)
		if reflect.DeepEqual(v.Interface(), sample) {
			t.Errorf("%s: the sample %v is the flag's default and proves nothing", path, sample)
		}
		v.Set(reflect.ValueOf(sample))
		args := render(want)
		if diff := cmp.Diff(want, parse(t, bind, args), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: %q parses to (-rendered +parsed):\n%s", path, args, diff)
		}
	}
	for path := range samples {
		if !slices.Contains(leaves, path) {
			t.Errorf("sample %s names no field", path)
		}
	}
}

func parse[O any](t *testing.T, bind func(*pflag.FlagSet, *O), args []string) O {
	t.Helper()
	var o O
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	bind(fs, &o)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return o
}

// TestDefaults: without arguments the controller runs with the API's image inspection
// defaults and the package's own.
func TestDefaults(t *testing.T) {
	_, got, err := ParseController(nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1beta1.DefaultImageInspectionSettings(), *got.ImageInspection); diff != "" {
		t.Errorf("inspection defaults (-api +flags):\n%s", diff)
	}
	if got.Workers != DefaultWorkers || got.InspectWorkers != DefaultInspectWorkers || got.RetryBaseDelay != DefaultRetryBaseDelay ||
		got.RetryMaxDelay != DefaultRetryMaxDelay || got.QPS != DefaultQPS || got.Burst != DefaultBurst {
		t.Errorf("defaults %+v", got)
	}
}

// TestRefused: values the controller cannot run with fail at parse time, naming the flag and
// the value.
func TestRefused(t *testing.T) {
	tests := map[string]struct {
		arg     string
		wantErr string
	}{
		"no workers":          {arg: "--workers=0", wantErr: `invalid argument "0" for "--workers" flag: must be positive`},
		"negative workers":    {arg: "--workers=-4", wantErr: `invalid argument "-4" for "--workers" flag: must be positive`},
		"zero base delay":     {arg: "--retry-base-delay=0s", wantErr: `invalid argument "0s" for "--retry-base-delay" flag: must be positive`},
		"negative max delay":  {arg: "--retry-max-delay=-1s", wantErr: `invalid argument "-1s" for "--retry-max-delay" flag: must be positive`},
		"malformed duration":  {arg: "--retry-max-delay=soon", wantErr: `invalid argument "soon" for "--retry-max-delay" flag: time: invalid duration "soon"`},
		"pull secret no name": {arg: "--global-pull-secret=pull-secret", wantErr: `invalid argument "pull-secret" for "--global-pull-secret" flag: want namespace/name`},
		"pull secret nested":  {arg: "--global-pull-secret=a/b/c", wantErr: `invalid argument "a/b/c" for "--global-pull-secret" flag: want namespace/name`},
		"pull secret no ns":   {arg: "--global-pull-secret=/b", wantErr: `invalid argument "/b" for "--global-pull-secret" flag: want namespace/name`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseController([]string{tc.arg})
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: error %v, want %s", tc.arg, err, tc.wantErr)
			}
		})
	}
}

// TestCommand: the subcommand, then the global flags, then the component's.
func TestCommand(t *testing.T) {
	got := Command(WebhookCommand, Global{LogVerbosity: v1beta1.LogVerbosityNormal}, Webhook{OperatorNamespace: "ns", Port: 9443}.Args())
	want := []string{"webhook", "--log-verbosity=Normal", "--operator-namespace=ns", "--port=9443"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
