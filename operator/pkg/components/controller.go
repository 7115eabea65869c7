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

package components

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/cmdline"
	"github.com/archgate/archgate/operator/internal/collectors"
	"github.com/archgate/archgate/operator/internal/controller/execformatmonitor"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/credprovider"
	"github.com/archgate/archgate/operator/internal/egress"
	"github.com/archgate/archgate/operator/internal/inspect"
	"github.com/archgate/archgate/operator/internal/knownimages"
)

// DefaultLeaderElectionID names the placement controller's lease when
// ControllerOptions.LeaderElectionID is empty (the default of --leader-election-id).
const DefaultLeaderElectionID = cmdline.DefaultLeaderElectionID

// ControllerOptions configure the pod placement controller.
type ControllerOptions struct {
	Common
	// OperatorNamespace is the namespace the operator runs in: the default namespace of the
	// leader election lease.
	OperatorNamespace string
	// GlobalPullSecret names the cluster-wide pull secret used, after the pods' own
	// imagePullSecrets, to inspect images; nil means none. Only that secret is watched.
	GlobalPullSecret *types.NamespacedName

	// RegistriesConfPath, RegistriesConfDirPath, CertsDir, CABundleFile, AuthFilePath and
	// InsecureSkipTLSVerify configure registry access as in inspect.Options (registries.conf
	// mirrors and blocked registries, certs.d, an extra CA bundle, an auth file for mirrors).
	// Empty paths leave podman's defaults (/etc/containers/…).
	RegistriesConfPath    string
	RegistriesConfDirPath string
	CertsDir              string
	CABundleFile          string
	AuthFilePath          string
	InsecureSkipTLSVerify bool

	// CredentialProviderConfig is the path of a kubelet CredentialProviderConfig whose exec
	// plugins, found in CredentialProviderBinDir, give node credentials for the images they
	// match (as the kubelet's --image-credential-provider-config and -bin-dir); empty for none.
	CredentialProviderConfig, CredentialProviderBinDir string

	// Workers is the number of pods processed concurrently; the default of --workers
	// (cmdline.DefaultWorkers) when zero.
	Workers int
	// InspectWorkers bounds the images of one pod inspected concurrently; the default of
	// --inspect-workers when zero.
	InspectWorkers int
	// NamespaceWorkers bounds the pods of one namespace processed concurrently; a quarter of
	// Workers when zero (podplacement.Options).
	NamespaceWorkers int
	// ImageInspection is the resolved spec.imageInspection of the ClusterPodPlacementConfig
	// (cache size and TTL, inspection timeout, retry budget), used as is after validation: zero
	// means zero (no cache, no retry). Nil means the API's defaults,
	// v1beta1.DefaultImageInspectionSettings.
	ImageInspection *v1beta1.ImageInspectionSettings
	// RetryBaseDelay and RetryMaxDelay shape the per-pod exponential backoff; the defaults of
	// --retry-base-delay and --retry-max-delay when zero.
	RetryBaseDelay, RetryMaxDelay time.Duration

	// KnownImagesConfigMap names the ConfigMap of OperatorNamespace where the leader publishes
	// the images a pod without imagePullSecrets would be placed with, for the webhook to place pods at admission
	// (package knownimages); empty publishes nothing. Needs the cache (CacheSize > 0).
	KnownImagesConfigMap string
	// PlacementParametersConfigMap names the ConfigMap of OperatorNamespace where the leader also
	// publishes the params of the MutatingAdmissionPolicy (package admissionpolicy), with
	// KnownImagesConfigMap only; empty publishes none.
	PlacementParametersConfigMap string

	// ExecFormatErrorMonitor runs the exec-format-error monitor (the execFormatErrorMonitor
	// plugin) in the controller's process, as the leader; it caches every pod of the cluster,
	// reduced to what detection needs (package controller/execformatmonitor).
	ExecFormatErrorMonitor bool
	// ExecFormatErrorDeleteInterval, with ExecFormatErrorMonitor, makes the monitor delete the
	// pods it reports whose owner recreates them, at most once per owner per interval; zero only
	// reports.
	ExecFormatErrorDeleteInterval time.Duration

	// LeaderElection runs the controller active-passive; the lease is released on shutdown so
	// that a standby takes over at once.
	LeaderElection bool
	// LeaderElectionNamespace defaults to OperatorNamespace; LeaderElectionID to
	// DefaultLeaderElectionID.
	LeaderElectionNamespace, LeaderElectionID string
}

func (o ControllerOptions) withDefaults(ctx context.Context) (ControllerOptions, error) {
	var err error
	o.Common, err = o.Common.withDefaults(ctx)
	o.Workers = cmp.Or(max(o.Workers, 0), cmdline.DefaultWorkers)
	o.InspectWorkers = cmp.Or(max(o.InspectWorkers, 0), cmdline.DefaultInspectWorkers)
	if o.ImageInspection == nil {
		o.ImageInspection = ptr.To(v1beta1.DefaultImageInspectionSettings())
	}
	if errs := o.ImageInspection.Validate(field.NewPath("imageInspection")); len(errs) > 0 {
		err = errors.Join(err, fmt.Errorf("invalid controller settings: %w", errs.ToAggregate()))
	}
	o.RetryBaseDelay = cmp.Or(max(o.RetryBaseDelay, 0), cmdline.DefaultRetryBaseDelay)
	o.RetryMaxDelay = cmp.Or(max(o.RetryMaxDelay, 0), cmdline.DefaultRetryMaxDelay)
	o.LeaderElectionNamespace = cmp.Or(o.LeaderElectionNamespace, o.OperatorNamespace)
	o.LeaderElectionID = cmp.Or(o.LeaderElectionID, DefaultLeaderElectionID)
	return o, err
}

// RunPlacementController runs the pod placement controller until ctx is done: it removes the
// scheduling gate of gated pods after merging their images' architectures into their node
// affinity. Readiness (/readyz, and the Ready callback) means it leads and its caches are synced.
func RunPlacementController(ctx context.Context, cfg *rest.Config, opts ControllerOptions) error {
	opts, restCfg, err := start(ctx, cfg, opts, "controller")
	if err != nil {
		return err
	}
	metrics := newControllerMetrics()
	inspection, err := newInspection(opts, metrics.inspect)
	if err != nil {
		return err
	}
	mgr, err := newControllerManager(restCfg, opts)
	if err != nil {
		_ = inspection.egress.Close()
		return err
	}
	// The egress proxy serves from the manager's start to its stop; every inspection goes
	// through it.
	if err := errors.Join(mgr.Add(inspection.egress), metrics.register(opts.registerer(), opts, inspection.egress)); err != nil {
		_ = inspection.egress.Close()
		return err
	}
	if err := setUpPlacementController(mgr, opts, inspection, metrics); err != nil {
		return err
	}
	if err := addProbes(mgr, probes{check: cacheSynced(mgr), wait: mgr.GetCache().WaitForCacheSync, onReady: opts.Ready, needsLeader: true}); err != nil {
		return err
	}
	ii := *opts.ImageInspection
	opts.Logger.WithName("podplacement").Info("Starting the pod placement controller", "workers", opts.Workers, "cacheSize", ii.CacheSize,
		"cacheTTL", ii.CacheTTL, "inspectTimeout", ii.Timeout, "maxRetries", ii.MaxRetries, "maxGateAge", ii.MaxGateAge, "blockedNetworks", ii.BlockedNetworks, "allowedRegistries", ii.AllowedRegistries, "leaderElection", opts.LeaderElection,
		"execFormatErrorMonitor", opts.ExecFormatErrorMonitor, "execFormatErrorDeleteInterval", opts.ExecFormatErrorDeleteInterval)
	return mgr.Start(ctx)
}

// inspection is the image inspection the controller uses.
type inspection struct {
	inspector inspect.Inspector
	// invalidator drops cached results; nil without a cache.
	invalidator podplacement.Invalidator
	// published is what the known-images publisher reads; nil without a cache.
	published knownimages.Source
	// shortNames are registries.conf's rules for short image names.
	shortNames inspect.ShortNames
	// egress is the proxy every registry request goes through; listening, not yet serving.
	egress *egress.Proxy
}

// controllerMetrics are the collectors of the pod placement controller's parts, made in one
// place so that register is the whole of what the controller exports besides
// controller-runtime's own metrics (docs/metrics.md is tested against it).
type controllerMetrics struct {
	inspect    *inspect.Metrics
	placement  *podplacement.Metrics
	execFormat *execformatmonitor.Metrics
	publisher  *knownimages.PublisherMetrics
}

func newControllerMetrics() controllerMetrics {
	return controllerMetrics{
		inspect:    inspect.NewMetrics(),
		placement:  podplacement.NewMetrics(),
		execFormat: execformatmonitor.NewMetrics(),
		publisher:  knownimages.NewPublisherMetrics(),
	}
}

// register registers with r the collectors of the parts opts runs: inspection, its egress
// proxy and placement always; the exec-format-error monitor and the known-images publisher
// when they are on. It returns the errors of those that failed, joined.
func (m controllerMetrics) register(r prometheus.Registerer, opts ControllerOptions, proxy *egress.Proxy) error {
	errs := []error{
		m.inspect.Register(r),
		collectors.Register(r, proxy.Collectors()...),
		collectors.Register(r, m.placement.Collectors()...),
	}
	if opts.ExecFormatErrorMonitor {
		errs = append(errs, collectors.Register(r, m.execFormat.Collectors()...))
	}
	if opts.publishesKnownImages() {
		errs = append(errs, m.publisher.Register(r))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("registering the controller's metrics: %w", err)
	}
	return nil
}

// publishesKnownImages: the leader publishes the known images, which needs the cache.
func (o ControllerOptions) publishesKnownImages() bool {
	return o.KnownImagesConfigMap != "" && o.ImageInspection.CacheSize > 0
}

// newInspection builds the registry inspector, behind the bounded cache unless its size is
// zero, recording into metrics.
func newInspection(opts ControllerOptions, metrics *inspect.Metrics) (inspection, error) {
	ii := *opts.ImageInspection
	if opts.Restartable {
		// Podman caches parsed registries.conf files for the whole process: a controller
		// restarted in the same process must read the current ones.
		inspect.ReloadRegistriesConf()
	}
	blocked, err := egress.ParseNetworks(ii.BlockedNetworks)
	if err != nil {
		return inspection{}, fmt.Errorf("--%s: %w", cmdline.FlagBlockedNetworks, err)
	}
	iopts := inspect.Options{
		RegistriesConfPath:    opts.RegistriesConfPath,
		RegistriesConfDirPath: opts.RegistriesConfDirPath,
		CertsDir:              opts.CertsDir,
		CABundleFile:          opts.CABundleFile,
		AuthFilePath:          opts.AuthFilePath,
		InsecureSkipTLSVerify: opts.InsecureSkipTLSVerify,
		AllowedRegistries:     ii.AllowedRegistries,
		Timeout:               ii.Timeout,
		Metrics:               metrics,
	}
	proxy, err := egress.Listen(egress.Options{BlockedNetworks: blocked, PlainHTTP: iopts.AllowsPlainHTTP})
	if err != nil {
		return inspection{}, err
	}
	iopts.Proxy = proxy.Route(nil)
	registry, err := inspect.NewRegistryInspector(iopts)
	if err != nil {
		_ = proxy.Close()
		return inspection{}, fmt.Errorf("configuring image inspection: %w", err)
	}
	shortNames, err := iopts.ShortNames()
	if err != nil {
		_ = proxy.Close()
		return inspection{}, fmt.Errorf("reading the short-name rules of registries.conf: %w", err)
	}
	if ii.CacheSize <= 0 {
		return inspection{inspector: registry, shortNames: shortNames, egress: proxy}, nil
	}
	caching := inspect.NewCachingInspector(registry, inspect.CacheOptions{
		Size: ii.CacheSize, TTL: ii.CacheTTL, DigestSize: ii.CacheSize, FailureTTL: ii.FailureCacheTTL, Metrics: metrics,
	})
	var published knownimages.Source = caching
	if shortNames.Remapped() {
		published = knownimages.WithoutDockerHub(caching)
	}
	return inspection{inspector: caching, invalidator: caching, published: published, shortNames: shortNames, egress: proxy}, nil
}

// newNodeCredentials loads the credential provider plugins' configuration; nil without one.
// A missing executable is logged, not fatal: the images its provider matches are then inspected
// without its credentials, and their inspection errors name it.
func newNodeCredentials(opts ControllerOptions) (podplacement.NodeCredentials, error) {
	if opts.CredentialProviderConfig == "" {
		return nil, nil
	}
	if opts.CredentialProviderBinDir == "" {
		return nil, errors.New("--" + cmdline.FlagCredentialProviderBinDir + " is required with --" + cmdline.FlagCredentialProviderConfig)
	}
	cfg, err := credprovider.LoadConfig(opts.CredentialProviderConfig)
	if err != nil {
		return nil, err
	}
	ii := *opts.ImageInspection
	p, err := credprovider.New(credprovider.Options{
		Config: cfg, BinDir: opts.CredentialProviderBinDir, Timeout: ii.Timeout, ErrorTTL: ii.FailureCacheTTL,
	})
	if err != nil {
		return nil, err
	}
	log := opts.Logger.WithName("credprovider")
	for _, path := range p.Executables() {
		if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			log.Error(err, "Credential provider executable missing or not executable: its images are inspected without its credentials", "path", path)
		}
	}
	log.Info("Credential provider plugins configured", "config", opts.CredentialProviderConfig, "binDir", opts.CredentialProviderBinDir, "providers", len(cfg.Providers))
	return p, nil
}

// newControllerManager creates the controller's manager: the cache of gated pods, uncached
// secrets, leader election.
func newControllerManager(restCfg *rest.Config, opts ControllerOptions) (manager.Manager, error) {
	mopts := opts.managerOptions()
	mopts.Cache = podplacement.CacheOptions()
	clientOpts := podplacement.ClientOptions()
	clientOpts.Log = mopts.Client.Log
	mopts.Client = clientOpts
	mopts.LeaderElection = opts.LeaderElection
	mopts.LeaderElectionID = opts.LeaderElectionID
	mopts.LeaderElectionNamespace = opts.LeaderElectionNamespace
	mopts.LeaderElectionReleaseOnCancel = true
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("creating the placement controller manager: %w", err)
	}
	return mgr, nil
}

// setUpPlacementController sets up the pod placement reconciler and the parts that run with
// it, recording into metrics (registered by the caller).
func setUpPlacementController(mgr manager.Manager, opts ControllerOptions, in inspection, metrics controllerMetrics) error {
	ii := *opts.ImageInspection
	nodeCreds, err := newNodeCredentials(opts)
	if err != nil {
		return err
	}
	r, err := podplacement.New(podplacement.Options{
		NodeCredentials:  nodeCreds,
		ShortNames:       in.shortNames.Candidates,
		Inspector:        in.inspector,
		Invalidator:      in.invalidator,
		GlobalPullSecret: opts.GlobalPullSecret,
		Workers:          opts.Workers,
		InspectWorkers:   opts.InspectWorkers,
		NamespaceWorkers: opts.NamespaceWorkers,
		InspectTimeout:   ii.Timeout,
		MaxRetries:       ii.MaxRetries,
		MaxGateAge:       ii.MaxGateAge,
		MaxImagesPerPod:  ii.MaxImagesPerPod,
		RetryBaseDelay:   opts.RetryBaseDelay,
		RetryMaxDelay:    opts.RetryMaxDelay,
		Metrics:          metrics.placement,
	})
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	// Liveness that means progress: a leader whose workers are stuck still renews its lease and
	// serves its probes; failing this check restarts it, and the standby (or the restarted
	// replica) takes the pods over. A replica that does not lead releases nothing, by design.
	if err := mgr.AddHealthzCheck("progress", func(req *http.Request) error {
		select {
		case <-mgr.Elected():
			return r.Stalled(req.Context())
		default:
			return nil
		}
	}); err != nil {
		return fmt.Errorf("adding the progress check: %w", err)
	}
	if opts.ExecFormatErrorMonitor {
		if err := execformatmonitor.SetupWithManager(mgr, execformatmonitor.Options{Metrics: metrics.execFormat, DeleteInterval: opts.ExecFormatErrorDeleteInterval}); err != nil {
			return err
		}
	}
	return addKnownImagesPublisher(mgr, opts, in.published, r.GlobalKeyring, metrics.publisher)
}
