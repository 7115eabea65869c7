//go:build integration

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

// Package podplacement holds the integration tests of the pod placement path: a real
// kube-apiserver and etcd (testenv), the scheduling-gate webhook registered through the
// MutatingWebhookConfiguration that components builds and called by the apiserver over TLS, the pod
// placement controller started by components exactly as the binary and the simulator start it, and
// in-process fake registries over TLS.
package podplacement

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/credprovider/credprovidertest"
	"github.com/archgate/archgate/operator/internal/hostfiles"
	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/testenv"
)

const (
	operatorNamespace = "archgate-system"
	globalSecretName  = "global-pull-secret"
	// maxRetries and the delays keep failure tests short: 3 attempts within ~100 ms.
	maxRetries     = 2
	retryBaseDelay = 20 * time.Millisecond
	retryMaxDelay  = 100 * time.Millisecond
	// Users of the private registry.
	teamUser, teamPassword     = "team", "team-pw"
	globalUser, globalPassword = "global", "global-pw"
	// pluginUser is what the fake kubelet credential provider plugin returns for plugin-only/.
	pluginUser, pluginPassword = "node-plugin", "node-plugin-pw"
	pluginName                 = "fake-credential-provider"
	// fileUser is the credential the file plugin reads from its args' file, as AKS's
	// acr-credential-provider reads azure.json, for file-creds/ only.
	fileUser, filePassword = "azure-sp", "azure-sp-secret"
	filePluginName         = "fake-file-credential-provider"
	// mirrorUser is the mirror's credential in the controller's auth file (what the operator
	// renders from imageInspection.mirrorCredentialsSecretRef), for mirrored-private/ only.
	mirrorUser, mirrorPassword = "mirror-puller", "mirror-pw"
)

// suite is the state shared by the package's tests, set up once by TestMain.
type suite struct {
	ctx    context.Context
	cfg    *rest.Config
	scheme *runtime.Scheme
	client client.Client
	log    logr.Logger

	// main serves public and private repositories (basic auth); primary is always down and
	// mirrored by mirror (registries.conf), which serves mirrored/ anonymously, mirrored-private/
	// to the auth file's mirrorUser and mirrored-other/ to teamUser only; flaky is put into an
	// outage by a test.
	main, primary, mirror, flaky *fakeregistry.Registry
	certsDir                     string
	registriesConf               string
	registriesConfDir            string
	authFile                     string // the controller's auth file, for mirrors
	// credentialProviderConfig and pluginBinDir configure the fake kubelet credential provider
	// plugin; pluginLog receives one line per execution.
	credentialProviderConfig, pluginBinDir, pluginLog string
	// hostFiles stands for the node's host file as the controller's init container has it
	// mounted (azure.json's shape, mode 0600), and pluginCredentialsFile for its copy, the
	// file the file plugin's args name, as hostfiles.Copy (`archgate copy-host-files`) makes it.
	hostFiles             hostfiles.Options
	pluginCredentialsFile string

	controllerOnce    sync.Once
	controllerMetrics *prometheus.Registry
	// logs receives every log entry of the run, at every verbosity.
	logs              *observer.ObservedLogs
	controllerStarted bool
	controllerErr     chan error
	// servingCertDir and servingCA are envtest's webhook serving certificate (for 127.0.0.1)
	// and its CA, for the webhooks a test starts.
	servingCertDir string
	servingCA      []byte
}

var s suite

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.ctx = ctx
	// Everything the components log, at every verbosity, also goes to s.logs: at the end the
	// run is searched for the credentials it used (none may appear).
	logs, observed := observer.New(zapcore.Level(-127))
	s.logs = observed
	s.log = zap.New(zap.WriteTo(os.Stderr), zap.Level(logLevel()),
		zap.RawZapOpts(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, logs) })))
	// controller-runtime's internal API reader always logs through the global logger.
	logf.SetLogger(s.log)

	dir, err := os.MkdirTemp("", "archgate-podplacement-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	if err := startRegistries(ctx, dir); err != nil {
		return fail(err)
	}
	defer s.main.Close()
	defer s.primary.Close()
	defer s.mirror.Close()
	defer s.flaky.Close()
	if err := writeCredentialProvider(dir); err != nil {
		return fail(err)
	}

	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + components.WebhookPath
	// The namespaces labelled admissionPlacementLabel are served by a second webhook, with
	// admission placement on (startAdmissionWebhook); every other namespace by this one.
	mwc := components.MutatingWebhookConfiguration(components.WebhookConfigurationOptions{
		Name:         "archgate-scheduling-gate",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
		NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: admissionPlacementLabel, Operator: metav1.LabelSelectorOpDoesNotExist}},
		},
		OperatorNamespace: operatorNamespace,
	})
	env, err := testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{mwc},
			LocalServingHost: "127.0.0.1",
			LocalServingPort: port,
		},
	})
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	s.cfg = env.Config
	if s.scheme, err = components.NewScheme(); err != nil {
		return fail(err)
	}
	if s.client, err = client.New(s.cfg, client.Options{Scheme: s.scheme}); err != nil {
		return fail(err)
	}
	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return fail(err)
	}

	certDir := env.Environment.WebhookInstallOptions.LocalServingCertDir
	s.servingCertDir, s.servingCA = certDir, env.Environment.WebhookInstallOptions.LocalServingCAData
	stopWebhook, err := startWebhook(ctx, components.WebhookOptions{Port: port, CertDir: certDir})
	if err != nil {
		return fail(err)
	}
	defer stopWebhook()
	stopAdmission, err := startAdmissionWebhook(ctx, certDir, env.Environment.WebhookInstallOptions.LocalServingCAData)
	if err != nil {
		return fail(err)
	}
	defer stopAdmission()

	s.controllerErr = make(chan error, 1)
	code := m.Run()
	if leaks := credentialsInLogs(logText(s.logs)); code == 0 && len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "the components' logs contain credentials used by the tests: %q\n", leaks)
		for _, line := range strings.Split(logText(s.logs), "\n") {
			if len(credentialsInLogs(line)) > 0 {
				fmt.Fprintln(os.Stderr, "  ", line)
			}
		}
		code = 1
	}
	if code == 0 && s.controllerStarted && !strings.Contains(logText(s.logs), "Starting the pod placement controller") {
		fmt.Fprintln(os.Stderr, "the log capture saw nothing of the controller: the credentials check proves nothing")
		code = 1
	}
	cancel() // stops the controller, if a test started it
	if s.controllerStarted {
		if err := <-s.controllerErr; err != nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
			code = 1
		}
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "setting up the integration suite:", err)
	return 1
}

// logLevel is the components' log level: errors only, unless ARCHGATE_TEST_LOG_LEVEL=N asks
// for V(N) (0 is info).
func logLevel() zapcore.Level {
	if v, err := strconv.Atoi(os.Getenv("ARCHGATE_TEST_LOG_LEVEL")); err == nil {
		return zapcore.Level(-v)
	}
	return zapcore.ErrorLevel
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRegistries starts the fake registries, writes their CAs into a certs.d directory and a
// registries.conf that mirrors primary to mirror.
func startRegistries(ctx context.Context, dir string) error {
	mainCatalog, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{Repositories: []fakeregistry.RepositorySpec{
		repo("library/multi", "latest", fakeregistry.FormatOCIIndex, true, "linux/amd64", "linux/arm64/v8", "linux/ppc64le", "linux/s390x"),
		repo("team/api", "v1", fakeregistry.FormatOCIManifest, false, "linux/arm64"),
		repo("legacy/tool", "3.1", fakeregistry.FormatDockerManifest, false, "linux/amd64"),
		// Only TestAdmissionPlacementAfterImageRewrite names it, so it is never published before.
		repo("legacy/rewrite-target", "1", fakeregistry.FormatDockerManifest, false, "linux/amd64"),
		repo("team/dockerlist", "v2", fakeregistry.FormatDockerManifestList, false, "linux/amd64", "linux/arm/v7", "windows/amd64"),
		repo("team/windows-app", "v1", fakeregistry.FormatOCIManifest, false, "windows/amd64"),
		{Name: "operators/bundle", Images: []fakeregistry.ImageSpec{{Tags: []string{"v0.1.0"}, Format: fakeregistry.FormatOCIManifest, Platforms: []string{"linux/amd64"}, NoBinaries: true}}},
		repo("private/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/amd64", "linux/s390x"),
		repo("global-only/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/arm64", "linux/ppc64le"),
		repo("plugin-only/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/s390x", "linux/ppc64le"),
		repo("plugin-only/admitted", "v1", fakeregistry.FormatOCIIndex, false, "linux/arm64", "linux/s390x"),
		repo("file-creds/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/arm64", "linux/ppc64le"),
		repo("file-creds/rotated", "v1", fakeregistry.FormatOCIIndex, false, "linux/arm64", "linux/ppc64le"),
	}})
	if err != nil {
		return err
	}
	if s.main, err = fakeregistry.Start(ctx, fakeregistry.Options{Catalog: mainCatalog, TLS: true, Auth: fakeregistry.Auth{
		Mode: fakeregistry.AuthBasic,
		Users: map[string]fakeregistry.User{
			teamUser:   {Password: teamPassword, Repositories: []string{"private/**"}},
			globalUser: {Password: globalPassword, Repositories: []string{"global-only/**"}},
			pluginUser: {Password: pluginPassword, Repositories: []string{"plugin-only/**"}},
			fileUser:   {Password: filePassword, Repositories: []string{"file-creds/**"}},
		},
		Anonymous: []string{"library/**", "team/**", "legacy/**", "operators/**"},
	}}); err != nil {
		return err
	}
	mirrored, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{Repositories: []fakeregistry.RepositorySpec{
		repo("mirrored/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/ppc64le", "linux/s390x"),
		repo("mirrored-private/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/arm64", "linux/s390x"),
		repo("mirrored-other/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/amd64"),
	}})
	if err != nil {
		return err
	}
	if s.primary, err = fakeregistry.Start(ctx, fakeregistry.Options{Catalog: mirrored, TLS: true,
		Faults: fakeregistry.Faults{Outage: fakeregistry.OutageUnavailable}}); err != nil {
		return err
	}
	if s.mirror, err = fakeregistry.Start(ctx, fakeregistry.Options{Catalog: mirrored, TLS: true, Auth: fakeregistry.Auth{
		Mode: fakeregistry.AuthBasic,
		Users: map[string]fakeregistry.User{
			mirrorUser: {Password: mirrorPassword, Repositories: []string{"mirrored-private/**"}},
			teamUser:   {Password: teamPassword, Repositories: []string{"mirrored-other/**"}},
		},
		Anonymous: []string{"mirrored/**"},
	}}); err != nil {
		return err
	}
	flakyCatalog, err := fakeregistry.NewCatalog(fakeregistry.CatalogSpec{Repositories: []fakeregistry.RepositorySpec{
		repo("flaky/app", "v1", fakeregistry.FormatOCIIndex, false, "linux/amd64", "linux/arm64"),
	}})
	if err != nil {
		return err
	}
	if s.flaky, err = fakeregistry.Start(ctx, fakeregistry.Options{Catalog: flakyCatalog, TLS: true}); err != nil {
		return err
	}

	s.certsDir = filepath.Join(dir, "certs.d")
	for _, r := range []*fakeregistry.Registry{s.main, s.primary, s.mirror, s.flaky} {
		if _, err := r.WriteCertsDir(s.certsDir); err != nil {
			return err
		}
	}
	s.registriesConf = filepath.Join(dir, "registries.conf")
	// Short names are searched in the mirror, then in main (TestShortNames).
	conf := fmt.Sprintf("unqualified-search-registries = [%q, %q]\n\n"+
		"[[registry]]\nlocation = %q\n\n[[registry.mirror]]\nlocation = %q\n\n"+
		"[[registry]]\nlocation = %q\nblocked = true\n", s.mirror.Host(), s.main.Host(), s.primary.Host(), s.mirror.Host(), blockedRegistry)
	if err := os.WriteFile(s.registriesConf, []byte(conf), 0o644); err != nil {
		return err
	}
	s.authFile = filepath.Join(dir, "auth.json")
	auth := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, s.mirror.Host()+"/mirrored-private",
		base64.StdEncoding.EncodeToString([]byte(mirrorUser+":"+mirrorPassword)))
	if err := os.WriteFile(s.authFile, []byte(auth), 0o600); err != nil {
		return err
	}
	// An empty drop-in directory, so that the host's /etc/containers/registries.conf.d is not read.
	s.registriesConfDir = filepath.Join(dir, "registries.conf.d")
	return os.MkdirAll(s.registriesConfDir, 0o755)
}

// writeCredentialProvider builds the fake kubelet credential provider plugin and writes the
// CredentialProviderConfig that gives its credentials for the main registry's plugin-only/
// repositories, passing them through the configured environment, and, as a second provider,
// for file-creds/ from the file its args name (AKS's shape: acr-credential-provider reads
// azure.json), read at every execution (cacheDuration 0).
func writeCredentialProvider(dir string) error {
	s.pluginBinDir = filepath.Join(dir, "plugins")
	if err := os.MkdirAll(s.pluginBinDir, 0o755); err != nil {
		return err
	}
	if err := credprovidertest.Build(s.pluginBinDir, pluginName, filePluginName); err != nil {
		return err
	}
	s.hostFiles = hostfiles.Options{FromDir: filepath.Join(dir, "host-files"), ToDir: filepath.Join(dir, "host-files-copy"),
		Files: []hostfiles.File{{Name: "0", HostPath: "/etc/kubernetes/azure.json"}}, UID: os.Getuid(), GID: os.Getgid()}
	for _, d := range []string{s.hostFiles.FromDir, s.hostFiles.ToDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	s.pluginCredentialsFile = filepath.Join(s.hostFiles.ToDir, "0")
	if err := writePluginCredentials(filePassword); err != nil {
		return err
	}
	s.pluginLog = filepath.Join(dir, "plugin-executions")
	s.credentialProviderConfig = filepath.Join(dir, "credential-providers.yaml")
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: %s
  matchImages: [%q]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--cache-key-type=Registry", "--auth-key=%s/plugin-only"]
  env:
  - {name: FAKE_PLUGIN_USERNAME, value: %s}
  - {name: FAKE_PLUGIN_PASSWORD, value: %s}
  - {name: FAKE_PLUGIN_LOG, value: %q}
- name: %s
  matchImages: [%q]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--cache-key-type=Registry", "--cache-duration=0s", "--auth-key=%s/file-creds", %q]
`, pluginName, s.main.Host()+"/plugin-only", s.main.Host(), pluginUser, pluginPassword, s.pluginLog,
		filePluginName, s.main.Host()+"/file-creds", s.main.Host(), s.pluginCredentialsFile)
	return os.WriteFile(s.credentialProviderConfig, []byte(config), 0o600)
}

// writePluginCredentials writes the host file with fileUser and password, shaped like AKS's
// azure.json (a service principal's aadClientId and aadClientSecret), root-only as AKS has it,
// and copies it for the plugin as the controller's init container does at the pod's start.
func writePluginCredentials(password string) error {
	data, err := json.Marshal(map[string]string{"aadClientId": fileUser, "aadClientSecret": password})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.hostFiles.FromDir, "0"), data, 0o600); err != nil {
		return err
	}
	return hostfiles.Copy(s.hostFiles)
}

func repo(name, tag string, format fakeregistry.Format, attestations bool, platforms ...string) fakeregistry.RepositorySpec {
	return fakeregistry.RepositorySpec{Name: name, Images: []fakeregistry.ImageSpec{{
		Tags: []string{tag}, Format: format, Platforms: platforms, Attestations: attestations,
	}}}
}

// admissionPlacementLabel marks the namespaces whose pods the admission-placement webhook serves.
const admissionPlacementLabel = "archgate-test/admission-placement"

// startWebhook runs a webhook as the binary runs it (opts completed with the suite's host,
// namespace, logger) until stop, and returns once Ready says the apiserver can reach it.
func startWebhook(ctx context.Context, opts components.WebhookOptions) (stop func(), err error) {
	wctx, cancel := context.WithCancel(ctx)
	ready, done := make(chan struct{}), make(chan error, 1)
	opts.Common = components.Common{Logger: s.log.WithName("webhook"), Registerer: prometheus.NewRegistry(), Ready: func() { close(ready) }}
	opts.Host, opts.OperatorNamespace = "127.0.0.1", operatorNamespace
	go func() { done <- components.RunWebhook(wctx, s.cfg, opts) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "webhook:", err)
		}
	}
	select {
	case <-ready:
		return stop, nil
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("webhook on port %d stopped before serving: %w", opts.Port, err)
	case <-time.After(30 * time.Second):
		stop()
		return nil, fmt.Errorf("webhook on port %d not serving after 30s", opts.Port)
	}
}

// startAdmissionWebhook runs a second webhook with admission placement on, registered for the
// namespaces labelled admissionPlacementLabel, as the operator renders it (the controller
// publishes into the same ConfigMap, see controllerOptions).
func startAdmissionWebhook(ctx context.Context, certDir string, caBundle []byte) (stop func(), err error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	stop, err = startWebhook(ctx, components.WebhookOptions{Port: port, CertDir: certDir, KnownImagesConfigMap: components.DefaultKnownImagesConfigMap})
	if err != nil {
		return nil, err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + components.WebhookPath
	mwc := components.MutatingWebhookConfiguration(components.WebhookConfigurationOptions{
		Name:              "archgate-admission-placement",
		ClientConfig:      admissionregistrationv1.WebhookClientConfig{URL: &url},
		CABundle:          caBundle,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{admissionPlacementLabel: "on"}},
		OperatorNamespace: operatorNamespace,
	})
	if err := s.client.Create(ctx, mwc); err != nil {
		stop()
		return nil, fmt.Errorf("registering the admission-placement webhook: %w", err)
	}
	return stop, nil
}

// blockedRegistry is blocked by the tests' registries.conf; nothing listens there.
const blockedRegistry = "blocked.registry.example"

// controllerOptions are the options the tests run the controller with.
func controllerOptions() components.ControllerOptions {
	return components.ControllerOptions{
		Common:                   components.Common{Logger: s.log.WithName("controller"), Registerer: s.controllerMetrics, Restartable: true},
		OperatorNamespace:        operatorNamespace,
		GlobalPullSecret:         &types.NamespacedName{Namespace: operatorNamespace, Name: globalSecretName},
		RegistriesConfPath:       s.registriesConf,
		RegistriesConfDirPath:    s.registriesConfDir,
		AuthFilePath:             s.authFile,
		CertsDir:                 s.certsDir,
		CredentialProviderConfig: s.credentialProviderConfig,
		CredentialProviderBinDir: s.pluginBinDir,
		ImageInspection: &v1beta1.ImageInspectionSettings{
			CacheSize: v1beta1.DefaultImageCacheSize, CacheTTL: v1beta1.DefaultImageCacheTTL,
			Timeout: 10 * time.Second, MaxRetries: maxRetries, MaxGateAge: v1beta1.DefaultMaxGateAge, MaxImagesPerPod: v1beta1.DefaultMaxImagesPerPod,
		},
		RetryBaseDelay:       retryBaseDelay,
		RetryMaxDelay:        retryMaxDelay,
		LeaderElection:       true,
		KnownImagesConfigMap: components.DefaultKnownImagesConfigMap,
		// The monitor runs beside placement in every test, as the operator renders it, with
		// the action DeletePod (which leaves pods without a recreating owner alone).
		ExecFormatErrorMonitor:        true,
		ExecFormatErrorDeleteInterval: time.Hour,
	}
}

// startController starts the placement controller shared by the tests, once, and waits until
// it leads with synced caches. Benchmarks run their own and must not share the process with it.
func startController(t *testing.T) {
	t.Helper()
	s.controllerOnce.Do(func() {
		s.controllerMetrics = prometheus.NewRegistry()
		ready := make(chan struct{})
		opts := controllerOptions()
		opts.Ready = func() { close(ready) }
		s.controllerStarted = true
		go func() { s.controllerErr <- components.RunPlacementController(s.ctx, s.cfg, opts) }()
		select {
		case <-ready:
		case err := <-s.controllerErr:
			s.controllerStarted = false
			t.Fatalf("controller stopped before it was ready: %v", err)
		case <-time.After(60 * time.Second):
			t.Fatal("controller not ready after 60s")
		}
	})
	if !s.controllerStarted {
		t.Fatal("the controller failed to start")
	}
}

// logText renders every observed entry (message and fields) as text, one line each.
func logText(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "%s %s %v\n", e.LoggerName, e.Message, e.ContextMap())
	}
	return b.String()
}

// credentialsInLogs returns the test credentials (passwords, and the base64 "auth" forms of the
// users' credentials) that appear in logs.
func credentialsInLogs(logs string) []string {
	var found []string
	for _, secret := range []string{
		teamPassword, globalPassword, pluginPassword, mirrorPassword, filePassword,
		base64.StdEncoding.EncodeToString([]byte(mirrorUser + ":" + mirrorPassword)),
		base64.StdEncoding.EncodeToString([]byte(pluginUser + ":" + pluginPassword)),
		base64.StdEncoding.EncodeToString([]byte(teamUser + ":" + teamPassword)),
		base64.StdEncoding.EncodeToString([]byte(globalUser + ":" + globalPassword)),
	} {
		if strings.Contains(logs, secret) {
			found = append(found, secret)
		}
	}
	return found
}
