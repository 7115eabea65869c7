package operand

import (
	"github.com/archgate/archgate/operator/pkg/components"
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
// the operator passes them to a deployed controller; zero counts and delays
// take the controller's defaults. A process gets the same options as flags
// (components.ControllerArgs).
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
