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

package main

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/cmdline/fieldpath"
	"github.com/archgate/archgate/operator/pkg/components"
)

// commonSamples are a value other than the flag's default of each option of Common with a flag.
func commonSamples() map[string]any {
	return map[string]any{"Common.QPS": float32(3), "Common.Burst": 4, "Common.MetricsBindAddress": "127.0.0.1:1",
		"Common.HealthProbeBindAddress": "127.0.0.1:2", "Common.MetricsCertDir": "/m", "Common.PprofBindAddress": "127.0.0.1:3", "Common.EnableHTTP2": true}
}

func with(m map[string]any, more map[string]any) map[string]any {
	maps.Copy(m, more)
	return m
}

// TestComponentArgsRoundTrip: a component the simulator starts as a process
// (components.WebhookArgs and the like) runs with the options it would run with in-process:
// every option with a flag comes back from the binary's parsing unchanged. An option without a
// value here (and not in noFlag) fails the test.
func TestComponentArgsRoundTrip(t *testing.T) {
	t.Run("webhook", func(t *testing.T) {
		roundTripOptions(t, components.WebhookArgs, cmdline.ParseWebhook, webhookOptions, with(commonSamples(), map[string]any{
			"Host": "127.0.0.1", "Port": 1, "CertDir": "/c", "OperatorNamespace": "op", "KnownImagesConfigMap": "k", "MaxImagesPerPod": 2}))
	})
	t.Run("local webhook", func(t *testing.T) {
		roundTripOptions(t, components.LocalWebhookArgs, cmdline.ParseWebhook, localWebhookOptions, with(commonSamples(), map[string]any{
			"Namespace": "team", "Host": "127.0.0.1", "Port": 1, "CertDir": "/c"}))
	})
	t.Run("controller", func(t *testing.T) {
		roundTripOptions(t, components.ControllerArgs, cmdline.ParseController, controllerOptions, with(commonSamples(), map[string]any{
			"OperatorNamespace": "op", "GlobalPullSecret": &types.NamespacedName{Namespace: "a", Name: "b"}, "RegistriesConfPath": "/r",
			"RegistriesConfDirPath": "/r.d", "CertsDir": "/certs.d", "CABundleFile": "/ca", "AuthFilePath": "/auth", "InsecureSkipTLSVerify": true,
			"CredentialProviderConfig": "/cp.yaml", "CredentialProviderBinDir": "/cp", "Workers": 1, "InspectWorkers": 2, "NamespaceWorkers": 3,
			"ImageInspection.CacheSize": 5, "ImageInspection.CacheTTL": time.Second, "ImageInspection.Timeout": 2 * time.Second,
			"ImageInspection.MaxRetries": 6, "ImageInspection.FailureCacheTTL": 3 * time.Second, "ImageInspection.MaxGateAge": time.Hour,
			"ImageInspection.MaxImagesPerPod": 7, "ImageInspection.BlockedNetworks": []string{"10.0.0.0/8"},
			"ImageInspection.AllowedRegistries": []string{"quay.io"}, "RetryBaseDelay": time.Second, "RetryMaxDelay": time.Minute,
			"KnownImagesConfigMap": "k", "PlacementParametersConfigMap": "p", "ExecFormatErrorMonitor": true,
			"ExecFormatErrorDeleteInterval": time.Minute, "LeaderElection": true, "LeaderElectionNamespace": "l", "LeaderElectionID": "id"}))
	})
	t.Run("local controller", func(t *testing.T) {
		roundTripOptions(t, components.LocalControllerArgs, cmdline.ParseController, localControllerOptions, with(commonSamples(), map[string]any{
			"Namespace": "team", "Workers": 9}))
	})
}

// roundTripOptions sets each option of O at a time to its sample, renders it with render,
// parses the arguments as the binary does and converts them back with convert.
func roundTripOptions[O, F any](t *testing.T, render func(components.Process, O) []string, parse func([]string) (cmdline.Global, F, error),
	convert func(F, logr.Logger) O, samples map[string]any) {
	t.Helper()
	// The options of pkg/components that only an in-process caller can set.
	noFlag := []string{"Common.Scheme", "Common.Registerer", "Common.Restartable", "Common.Logger", "Common.Ready"}
	process := components.Process{Kubeconfig: "/kubeconfig", LogVerbosity: v1beta1.LogVerbosityDebug}
	leaf := func(path string) bool { _, ok := samples[path]; return ok || slices.Contains(noFlag, path) }
	for _, path := range fieldpath.Leaves(reflect.TypeFor[O](), leaf) {
		if slices.Contains(noFlag, path) {
			continue
		}
		sample, ok := samples[path]
		if !ok {
			t.Errorf("%s has no value in the round trip: add one (and its flag, if it has none)", path)
			continue
		}
		var opts O
		fieldpath.At(reflect.ValueOf(&opts).Elem(), path).Set(reflect.ValueOf(sample))
		args := render(process, opts)
		global, flags, err := parse(args[1:])
		if err != nil {
			t.Errorf("%s: %q: %v", path, args, err)
			continue
		}
		got := convert(flags, logr.Discard())
		if diff := cmp.Diff(sample, fieldpath.At(reflect.ValueOf(&got).Elem(), path).Interface()); diff != "" {
			t.Errorf("%s: %q runs with (-option +parsed):\n%s", path, args, diff)
		}
		if global.Kubeconfig != process.Kubeconfig || global.LogVerbosity != process.LogVerbosity {
			t.Errorf("%s: %q: global flags %+v, want those of %+v", path, args, global, process)
		}
	}
}
