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
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// The flags, in the order they are rendered (the order of the operator's Deployment args).

func globalFields() []field[Global] {
	return []field[Global]{
		optional(text(), flag[string]{"kubeconfig", "", "Path to a kubeconfig; default $KUBECONFIG, ~/.kube/config, then the in-cluster configuration."},
			func(g *Global) *string { return &g.Kubeconfig }),
		optional(text(), flag[string]{"context", "", "The kubeconfig context to use; default its current context."},
			func(g *Global) *string { return &g.Context }),
		optional(textOf[v1beta1.LogVerbosityLevel](), flag[v1beta1.LogVerbosityLevel]{FlagLogVerbosity, "",
			"Log verbosity as in ClusterPodPlacementConfig spec.logVerbosity (Normal, Debug, Trace, TraceAll); overrides --zap-log-level."},
			func(g *Global) *v1beta1.LogVerbosityLevel { return &g.LogVerbosity }),
	}
}

func commonFields() []field[Common] {
	return []field[Common]{
		optional(rate(), flag[float32]{"kube-api-qps", DefaultQPS, "Client rate limit (queries per second) towards the apiserver."},
			func(c *Common) *float32 { return &c.QPS }),
		optional(integer(), flag[int]{"kube-api-burst", DefaultBurst, "Client burst towards the apiserver."},
			func(c *Common) *int { return &c.Burst }),
		optional(text(), flag[string]{FlagMetricsBindAddress, ":8443",
			`Address of the Prometheus metrics endpoint (HTTPS; clients need a bearer token allowed to get /metrics); "0" disables it.`},
			func(c *Common) *string { return &c.MetricsBindAddress }),
		optional(text(), flag[string]{"health-probe-bind-address", ":8081", `Address of /healthz and /readyz; "0" disables them.`},
			func(c *Common) *string { return &c.HealthProbeBindAddress }),
		optional(text(), flag[string]{FlagMetricsCertDir, "",
			"Directory with tls.crt and tls.key of the metrics endpoint; empty or missing files: a self-signed certificate generated at start."},
			func(c *Common) *string { return &c.MetricsCertDir }),
		optional(text(), flag[string]{FlagPprofBindAddress, "0", `Address of /debug/pprof (CPU and heap profiles); "0" disables it.`},
			func(c *Common) *string { return &c.PprofBindAddress }),
		optional(boolean(), flag[bool]{"enable-http2", false,
			"Serve HTTP/2 on the webhook and metrics endpoints. Off: over HTTP/2 the apiserver sends every admission to one webhook replica."},
			func(c *Common) *bool { return &c.EnableHTTP2 }),
	}
}

// The flags both components have.

func namespaceFlag() flag[string] {
	return flag[string]{FlagNamespace, "", "Run as the local component of this namespace: the webhook adds the local gate to its pods that a " +
		"PodPlacementConfig selects, the controller applies its PodPlacementConfigs and removes the local gate (no image inspection). " +
		"Only the common flags, the webhook's --host, --port and --cert-dir, and the controller's --" + FlagWorkers + " apply."}
}

func operatorNamespaceFlag() flag[string] {
	return flag[string]{FlagOperatorNamespace, os.Getenv(EnvPodNamespace),
		"Namespace of the operator: its pods are never gated, and the default namespace of the controller's leader election lease (default $" + EnvPodNamespace + ")."}
}

func knownImagesFlag() flag[string] {
	return flag[string]{FlagKnownImagesConfigMap, "",
		"ConfigMap of --" + FlagOperatorNamespace + " with the images the controller inspected for pods without imagePullSecrets: the controller's leader " +
			"publishes them, the webhook places such a pod whose images are all in it at admission, without the gate. Empty: nothing published, every pod gated."}
}

func maxImagesFlag() flag[int] {
	return flag[int]{FlagMaxImagesPerPod, v1beta1.DefaultMaxImagesPerPod,
		"Most distinct images of a pod inspected (spec.imageInspection.maxImagesPerPod): the webhook admits a pod naming more without the gate, " +
			"with a warning; the controller releases it unplaced at once."}
}

func webhookFields() []field[Webhook] {
	fields := []field[Webhook]{
		optional(text(), namespaceFlag(), func(w *Webhook) *string { return &w.Namespace }),
		optional(text(), operatorNamespaceFlag(), func(w *Webhook) *string { return &w.OperatorNamespace }),
	}
	fields = append(fields, lift(func(w *Webhook) *Common { return &w.Common }, commonFields())...)
	return append(fields,
		optional(text(), knownImagesFlag(), func(w *Webhook) *string { return &w.KnownImagesConfigMap }),
		optional(text(), flag[string]{"host", "", "Address the webhook listens on; empty for all interfaces."},
			func(w *Webhook) *string { return &w.Host }),
		optional(text(), flag[string]{"cert-dir", DefaultWebhookCertDir, "Directory with the serving certificate (tls.crt, tls.key)."},
			func(w *Webhook) *string { return &w.CertDir }),
		optional(integer(), flag[int]{"port", DefaultWebhookPort, "TLS port of the webhook."},
			func(w *Webhook) *int { return &w.Port }),
		optional(integer(), maxImagesFlag(), func(w *Webhook) *int { return &w.MaxImagesPerPod }),
	)
}

func controllerFields() []field[Controller] {
	fields := []field[Controller]{
		optional(text(), namespaceFlag(), func(c *Controller) *string { return &c.Namespace }),
		optional(text(), operatorNamespaceFlag(), func(c *Controller) *string { return &c.OperatorNamespace }),
	}
	fields = append(fields, lift(func(c *Controller) *Common { return &c.Common }, commonFields())...)
	fields = append(fields,
		optional(text(), knownImagesFlag(), func(c *Controller) *string { return &c.KnownImagesConfigMap }),
		optional(boolean(), flag[bool]{"leader-elect", false, "Run active-passive with a leader election lease."},
			func(c *Controller) *bool { return &c.LeaderElection }),
		optional(text(), flag[string]{"leader-election-namespace", "", "Namespace of the lease (default --" + FlagOperatorNamespace + ")."},
			func(c *Controller) *string { return &c.LeaderElectionNamespace }),
		optional(text(), flag[string]{"leader-election-id", DefaultLeaderElectionID, "Name of the lease."},
			func(c *Controller) *string { return &c.LeaderElectionID }),
		optional(namespacedName(), flag[*types.NamespacedName]{FlagGlobalPullSecret, nil,
			"namespace/name of the cluster-wide pull secret (kubernetes.io/dockerconfigjson or dockercfg); empty for none."},
			func(c *Controller) **types.NamespacedName { return &c.GlobalPullSecret }),
	)
	fields = append(fields, registryFields()...)
	fields = append(fields, group(func(c *Controller) **v1beta1.ImageInspectionSettings { return &c.ImageInspection }, inspectionFields())...)
	return append(fields,
		optional(boolean(), flag[bool]{FlagExecFormatErrorMonitor, false,
			"Run the exec-format-error monitor: watch every pod (reduced to its failed containers' states) and report those whose container failed with an exec format error."},
			func(c *Controller) *bool { return &c.ExecFormatErrorMonitor }),
		optional(duration(), flag[time.Duration]{FlagExecFormatErrorDeleteInterval, 0,
			"With --" + FlagExecFormatErrorMonitor + ", also delete each reported pod whose ReplicaSet, StatefulSet or ReplicationController recreates it, at most once per owner per this interval; 0 only reports."},
			func(c *Controller) *time.Duration { return &c.ExecFormatErrorDeleteInterval }),
		optional(text(), flag[string]{FlagPlacementParameters, "",
			"ConfigMap of --" + FlagOperatorNamespace + " where the leader also publishes the params the admission policy places pods from (with --" + FlagKnownImagesConfigMap + "); empty publishes none."},
			func(c *Controller) *string { return &c.PlacementParametersConfigMap }),
		optional(positiveInteger(), flag[int]{FlagWorkers, DefaultWorkers, "Pods processed concurrently."},
			func(c *Controller) *int { return &c.Workers }),
		optional(integer(), flag[int]{"inspect-workers", DefaultInspectWorkers, "Images of one pod inspected concurrently."},
			func(c *Controller) *int { return &c.InspectWorkers }),
		optional(integer(), flag[int]{"namespace-workers", 0,
			"Pods of one namespace processed concurrently, so that one namespace cannot hold every worker (0: a quarter of --" + FlagWorkers + ")."},
			func(c *Controller) *int { return &c.NamespaceWorkers }),
		optional(positiveDuration(), flag[time.Duration]{FlagRetryBaseDelay, DefaultRetryBaseDelay, "First retry delay; it doubles per retry."},
			func(c *Controller) *time.Duration { return &c.RetryBaseDelay }),
		optional(positiveDuration(), flag[time.Duration]{FlagRetryMaxDelay, DefaultRetryMaxDelay, "Longest retry delay."},
			func(c *Controller) *time.Duration { return &c.RetryMaxDelay }),
	)
}

// registryFields configure how the controller reaches registries.
func registryFields() []field[Controller] {
	return []field[Controller]{
		optional(text(), flag[string]{"ca-bundle", "", "PEM file of CA certificates trusted for every registry, on top of the system roots."},
			func(c *Controller) *string { return &c.CABundleFile }),
		optional(text(), flag[string]{"registries-conf", "", "registries.conf (mirrors, blocked and insecure registries); empty for /etc/containers/registries.conf."},
			func(c *Controller) *string { return &c.RegistriesConfPath }),
		optional(text(), flag[string]{"registries-conf-dir", "", "registries.conf.d drop-in directory."},
			func(c *Controller) *string { return &c.RegistriesConfDirPath }),
		optional(text(), flag[string]{"auth-file", "", "Docker/podman auth file, used for registry mirrors."},
			func(c *Controller) *string { return &c.AuthFilePath }),
		optional(text(), flag[string]{"certs-dir", "", "certs.d directory: a host[:port] subdirectory of CA certificates per registry."},
			func(c *Controller) *string { return &c.CertsDir }),
		optional(text(), flag[string]{FlagCredentialProviderConfig, "",
			"kubelet CredentialProviderConfig (kubelet.config.k8s.io/v1) of the credential provider plugins whose credentials are tried after the global pull secret; empty for none."},
			func(c *Controller) *string { return &c.CredentialProviderConfig }),
		optional(text(), flag[string]{FlagCredentialProviderBinDir, "",
			"Directory of the credential provider plugins' executables (the kubelet's --image-credential-provider-bin-dir)."},
			func(c *Controller) *string { return &c.CredentialProviderBinDir }),
		optional(boolean(), flag[bool]{"insecure-skip-tls-verify", false, "Skip TLS verification and allow plain HTTP for every registry (development only)."},
			func(c *Controller) *bool { return &c.InsecureSkipTLSVerify }),
	}
}

// inspectionFields are spec.imageInspection, resolved, with the API's defaults (those of an
// unset spec.imageInspection): defaults and bounds live in api/v1beta1.
func inspectionFields() []field[v1beta1.ImageInspectionSettings] {
	type s = v1beta1.ImageInspectionSettings
	d := v1beta1.DefaultImageInspectionSettings()
	return []field[s]{
		always(integer(), flag[int]{FlagCacheSize, d.CacheSize, "Image inspection cache entries (spec.imageInspection.cacheSize); 0 disables the cache."},
			func(s *s) *int { return &s.CacheSize }),
		always(duration(), flag[time.Duration]{FlagCacheTTL, d.CacheTTL, "How long a result read through a tag is reused (spec.imageInspection.cacheTTL)."},
			func(s *s) *time.Duration { return &s.CacheTTL }),
		always(duration(), flag[time.Duration]{FlagInspectTimeout, d.Timeout, "Deadline to inspect one image (spec.imageInspection.timeout)."},
			func(s *s) *time.Duration { return &s.Timeout }),
		always(integer(), flag[int]{FlagMaxRetries, d.MaxRetries, "Inspection retries before the gate is removed without changes (spec.imageInspection.maxRetries); 0 for none."},
			func(s *s) *int { return &s.MaxRetries }),
		always(duration(), flag[time.Duration]{FlagFailureCacheTTL, d.FailureCacheTTL,
			"How long a failed inspection is remembered for every pod asking again (spec.imageInspection.failureCacheTTL); 0 for never."},
			func(s *s) *time.Duration { return &s.FailureCacheTTL }),
		always(duration(), flag[time.Duration]{FlagMaxGateAge, d.MaxGateAge,
			"Longest a pod keeps the scheduling gate, from its creation, before it is released unplaced (spec.imageInspection.maxGateAge)."},
			func(s *s) *time.Duration { return &s.MaxGateAge }),
		always(integer(), maxImagesFlag(), func(s *s) *int { return &s.MaxImagesPerPod }),
		list(flag[[]string]{FlagBlockedNetworks, d.BlockedNetworks,
			"CIDRs no registry connection may reach; the pods naming a registry there are released unplaced at once (spec.imageInspection.blockedNetworks)."},
			func(s *s) *[]string { return &s.BlockedNetworks }),
		list(flag[[]string]{FlagAllowedRegistries, d.AllowedRegistries,
			"The only registries whose images are inspected (host[:port] or *.domain); the pods naming another are released unplaced at once (spec.imageInspection.allowedRegistries). Empty allows every registry."},
			func(s *s) *[]string { return &s.AllowedRegistries }),
	}
}
