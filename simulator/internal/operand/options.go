package operand

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/settings"
)

// webhookOptions are the webhook's settings from the simulator's Config;
// Common is filled by the caller.
func webhookOptions(cfg Config) components.WebhookOptions {
	return components.WebhookOptions{
		Host:                 cfg.WebhookHost,
		Port:                 cfg.WebhookPort,
		CertDir:              cfg.WebhookCertDir,
		OperatorNamespace:    cfg.Namespace,
		KnownImagesConfigMap: cfg.KnownImagesConfigMap,
		MaxImagesPerPod:      cfg.ImageInspection.MaxImagesPerPod,
	}
}

// controllerOptions are the controller's settings from the simulator's
// Config. The image inspection settings are the resolved
// v1beta1.ImageInspectionSettings, used as is (zero means zero), exactly as
// the operator passes them to a deployed controller.
func controllerOptions(cfg Config) components.ControllerOptions {
	ii := cfg.ImageInspection
	return components.ControllerOptions{
		OperatorNamespace:            cfg.Namespace,
		GlobalPullSecret:             cfg.GlobalPullSecret,
		CertsDir:                     cfg.CertsDir,
		InsecureSkipTLSVerify:        cfg.InsecureRegistry,
		Workers:                      cfg.Workers,
		InspectWorkers:               cfg.InspectWorkers,
		ImageInspection:              &ii,
		RetryBaseDelay:               cfg.RetryBaseDelay,
		RetryMaxDelay:                cfg.RetryMaxDelay,
		KnownImagesConfigMap:         cfg.KnownImagesConfigMap,
		PlacementParametersConfigMap: cfg.PlacementParameters,
		ExecFormatErrorMonitor:       cfg.ExecFormatErrorMonitor,
	}
}

// webhookArgs are the `archgate webhook` flags for o (Common aside).
func webhookArgs(o components.WebhookOptions) []string {
	args := []string{"--host", o.Host, "--port", strconv.Itoa(o.Port), "--cert-dir", o.CertDir,
		"--operator-namespace", o.OperatorNamespace}
	if o.MaxImagesPerPod > 0 {
		args = append(args, "--"+settings.FlagMaxImages, strconv.Itoa(o.MaxImagesPerPod))
	}
	return append(args, knownImagesArgs(o.KnownImagesConfigMap)...)
}

// knownImagesArgs is the admission-placement flag both components get.
func knownImagesArgs(configMap string) []string {
	if configMap == "" {
		return nil
	}
	return []string{"--" + settings.FlagKnownImagesConfigMap, configMap}
}

// controllerArgs are the `archgate controller` flags for o (Common aside);
// zero durations and counts are left to the binary's defaults.
func controllerArgs(o components.ControllerOptions, global *types.NamespacedName) []string {
	args := append([]string{"--operator-namespace", o.OperatorNamespace}, settings.ImageInspectionArgs(*o.ImageInspection)...)
	args = append(args, knownImagesArgs(o.KnownImagesConfigMap)...)
	if o.PlacementParametersConfigMap != "" {
		args = append(args, "--"+settings.FlagPlacementParameters, o.PlacementParametersConfigMap)
	}
	if global != nil {
		args = append(args, "--global-pull-secret", global.Namespace+"/"+global.Name)
	}
	if o.CertsDir != "" {
		args = append(args, "--certs-dir", o.CertsDir)
	}
	if o.InsecureSkipTLSVerify {
		args = append(args, "--insecure-skip-tls-verify")
	}
	if o.ExecFormatErrorMonitor {
		args = append(args, "--"+settings.FlagExecFormatErrorMonitor)
	}
	// In a fixed order, so that the command line in the logs is stable.
	for _, f := range []struct {
		flag string
		n    int
	}{{"--workers", o.Workers}, {"--inspect-workers", o.InspectWorkers}} {
		if f.n > 0 {
			args = append(args, f.flag, strconv.Itoa(f.n))
		}
	}
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{{"--retry-base-delay", o.RetryBaseDelay}, {"--retry-max-delay", o.RetryMaxDelay}} {
		if f.d > 0 {
			args = append(args, f.flag, f.d.String())
		}
	}
	return args
}
