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
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/archgate/archgate/operator/api/v1beta1"
	"github.com/archgate/archgate/operator/internal/controller/localplacement"
	gatewebhook "github.com/archgate/archgate/operator/internal/webhook"
)

// LocalWebhookPath is the HTTP path a namespace's local webhook serves.
const LocalWebhookPath = gatewebhook.LocalPath

// LocalWebhookEntryName is the name of namespace's entry in a MutatingWebhookConfiguration.
func LocalWebhookEntryName(namespace string) string { return gatewebhook.LocalEntryName(namespace) }

// LocalControllerOptions configure a namespace's local pod placement controller
// (`archgate controller --namespace`).
type LocalControllerOptions struct {
	Common
	// Namespace is the one namespace served. Required.
	Namespace string
	// Workers is the number of pods processed concurrently; localplacement.DefaultWorkers when zero.
	Workers int
}

// RunLocalController runs the local pod placement controller of opts.Namespace until ctx is
// done. It runs one replica without leader election: it needs no Lease (so no RBAC for one), and
// a restarted replica re-lists the locally gated pods; until then they only wait. Readiness means
// its caches are synced.
func RunLocalController(ctx context.Context, cfg *rest.Config, opts LocalControllerOptions) error {
	opts, restCfg, err := start(ctx, cfg, opts, "local-controller")
	if err != nil {
		return err
	}
	mopts := opts.managerOptions()
	mopts.Cache = localplacement.CacheOptions(opts.Namespace)
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return fmt.Errorf("creating the local placement controller manager: %w", err)
	}
	r, err := localplacement.New(localplacement.Options{Namespace: opts.Namespace, Workers: opts.Workers})
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := addProbes(mgr, probes{check: cacheSynced(mgr), wait: mgr.GetCache().WaitForCacheSync, onReady: opts.Ready}); err != nil {
		return err
	}
	opts.Logger.WithName("localplacement").Info("Starting the local pod placement controller", "namespace", opts.Namespace)
	return mgr.Start(ctx)
}

func (o LocalControllerOptions) withDefaults(ctx context.Context) (LocalControllerOptions, error) {
	if o.Namespace == "" {
		return o, errors.New("components: the local controller needs a namespace")
	}
	var err error
	o.Common, err = o.Common.withDefaults(ctx)
	return o, err
}

// cacheSynced is a readiness check: the manager's caches have synced.
func cacheSynced(mgr manager.Manager) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("caches not synced")
		}
		return nil
	}
}

// LocalWebhookOptions configure a namespace's local webhook (`archgate webhook --namespace`).
type LocalWebhookOptions struct {
	Common
	// Namespace is the one namespace served. Required.
	Namespace string
	// Host, Port and CertDir are as in WebhookOptions.
	Host    string
	Port    int
	CertDir string
}

func (o LocalWebhookOptions) withDefaults(ctx context.Context) (LocalWebhookOptions, error) {
	if o.Namespace == "" {
		return o, errors.New("components: the local webhook needs a namespace")
	}
	wo, err := WebhookOptions{Common: o.Common, Host: o.Host, Port: o.Port, CertDir: o.CertDir}.withDefaults(ctx)
	o.Common, o.Port, o.CertDir = wo.Common, wo.Port, wo.CertDir
	return o, err
}

// RunLocalWebhook serves the local scheduling-gate webhook of opts.Namespace at
// LocalWebhookPath until ctx is done. It reads only the namespace's PodPlacementConfigs.
// Readiness means the TLS listener accepts connections and the configurations are cached.
func RunLocalWebhook(ctx context.Context, cfg *rest.Config, opts LocalWebhookOptions) error {
	opts, restCfg, err := start(ctx, cfg, opts, "local-webhook")
	if err != nil {
		return err
	}
	mopts := opts.managerOptions()
	mopts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	mopts.WebhookServer = webhook.NewServer(webhook.Options{
		Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir, CertName: TLSCertName, KeyName: TLSKeyName,
	})
	mgr, err := manager.New(restCfg, mopts)
	if err != nil {
		return fmt.Errorf("creating the local webhook manager: %w", err)
	}
	// Start the PodPlacementConfig informer with the manager, so that the first admission finds it synced.
	if _, err := mgr.GetCache().GetInformer(ctx, &v1beta1.PodPlacementConfig{}); err != nil {
		return fmt.Errorf("watching PodPlacementConfigs: %w", err)
	}
	server := mgr.GetWebhookServer()
	server.Register(LocalWebhookPath, &admission.Webhook{Handler: gatewebhook.NewLocalGate(mgr.GetScheme(), opts.Namespace, mgr.GetClient())})
	started, synced := server.StartedChecker(), cacheSynced(mgr)
	ready := func() error { return errors.Join(started(&http.Request{}), synced()) }
	if err := addProbes(mgr, probes{check: ready, onReady: opts.Ready}); err != nil {
		return err
	}
	opts.Logger.WithName("local-gate-pods").Info("Starting the local scheduling-gate webhook", "namespace", opts.Namespace, "port", opts.Port)
	return mgr.Start(ctx)
}
