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

// Package settings carries the resolved settings of the components (v1beta1.ImageInspectionSettings)
// to and from their command lines: the operator renders the controller Deployment's arguments
// with ImageInspectionArgs, the archgate binary parses them with BindImageInspectionFlags, and
// the simulator starts the controller from the same arguments. Defaults and bounds live in
// api/v1beta1 only.
package settings

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// Flags of the controller's image inspection settings.
const (
	FlagCacheSize      = "cache-size"
	FlagCacheTTL       = "cache-ttl"
	FlagInspectTimeout = "inspect-timeout"
	FlagMaxRetries     = "max-retries"
	FlagFailureTTL     = "failure-cache-ttl"
	FlagMaxGateAge     = "max-gate-age"
	FlagMaxImages      = "max-images-per-pod"
	FlagBlocked        = "blocked-networks"
	FlagAllowed        = "allowed-registries"
)

// FlagKnownImagesConfigMap names the ConfigMap of the operator's namespace through which the
// controller's leader publishes the images it inspected for pods without imagePullSecrets and the webhook places pods
// at admission (spec.admissionPlacement); the same flag on both components, empty for off.
const FlagKnownImagesConfigMap = "known-images-configmap"

// FlagPlacementParameters names the ConfigMap of the operator's namespace where the controller's
// leader also publishes the params the admission policy places pods from (with
// FlagKnownImagesConfigMap only); empty for none.
const FlagPlacementParameters = "placement-parameters-configmap"

// FlagCredentialProviderConfig and FlagCredentialProviderBinDir give the controller the kubelet
// credential provider plugins (spec.imageInspection.credentialProviders): the
// CredentialProviderConfig file and the directory of the plugins' executables, named like the
// kubelet's flags.
const (
	FlagCredentialProviderConfig = "image-credential-provider-config"
	FlagCredentialProviderBinDir = "image-credential-provider-bin-dir"
)

// FlagExecFormatErrorMonitor turns on the exec-format-error monitor in the controller; the
// operator sets it when spec.plugins.execFormatErrorMonitor is enabled.
const FlagExecFormatErrorMonitor = "exec-format-error-monitor"

// FlagExecFormatErrorDeleteInterval makes the exec-format-error monitor also delete the pods it
// reports whose owner recreates them, at most once per owner per the interval; the operator sets
// it for spec.plugins.execFormatErrorMonitor.action DeletePod. Zero (the default) only reports.
const FlagExecFormatErrorDeleteInterval = "exec-format-error-delete-interval"

// ImageInspectionArgs returns the controller's command-line arguments for s, every setting
// spelled out (the binary's defaults play no part in a deployed controller).
func ImageInspectionArgs(s v1beta1.ImageInspectionSettings) []string {
	return []string{
		"--" + FlagCacheSize + "=" + strconv.Itoa(s.CacheSize),
		"--" + FlagCacheTTL + "=" + s.CacheTTL.String(),
		"--" + FlagInspectTimeout + "=" + s.Timeout.String(),
		"--" + FlagMaxRetries + "=" + strconv.Itoa(s.MaxRetries),
		"--" + FlagFailureTTL + "=" + s.FailureCacheTTL.String(),
		"--" + FlagMaxGateAge + "=" + s.MaxGateAge.String(),
		"--" + FlagMaxImages + "=" + strconv.Itoa(s.MaxImagesPerPod),
		"--" + FlagBlocked + "=" + strings.Join(s.BlockedNetworks, ","),
		"--" + FlagAllowed + "=" + strings.Join(s.AllowedRegistries, ","),
	}
}

// BindImageInspectionFlags defines the image inspection flags on fs, storing into s, with the
// API's defaults (those of an unset spec.imageInspection).
func BindImageInspectionFlags(fs *pflag.FlagSet, s *v1beta1.ImageInspectionSettings) {
	d := v1beta1.DefaultImageInspectionSettings()
	fs.IntVar(&s.CacheSize, FlagCacheSize, d.CacheSize, "Image inspection cache entries (spec.imageInspection.cacheSize); 0 disables the cache.")
	fs.DurationVar(&s.CacheTTL, FlagCacheTTL, d.CacheTTL, "How long a result read through a tag is reused (spec.imageInspection.cacheTTL).")
	fs.DurationVar(&s.Timeout, FlagInspectTimeout, d.Timeout, "Deadline to inspect one image (spec.imageInspection.timeout).")
	fs.DurationVar(&s.FailureCacheTTL, FlagFailureTTL, d.FailureCacheTTL, "How long a failed inspection is remembered for every pod asking again (spec.imageInspection.failureCacheTTL); 0 for never.")
	fs.IntVar(&s.MaxRetries, FlagMaxRetries, d.MaxRetries, "Inspection retries before the gate is removed without changes (spec.imageInspection.maxRetries); 0 for none.")
	fs.DurationVar(&s.MaxGateAge, FlagMaxGateAge, d.MaxGateAge, "Longest a pod keeps the scheduling gate, from its creation, before it is released unplaced (spec.imageInspection.maxGateAge).")
	fs.IntVar(&s.MaxImagesPerPod, FlagMaxImages, d.MaxImagesPerPod, "Most distinct images of a pod inspected; a pod naming more is released unplaced at once (spec.imageInspection.maxImagesPerPod).")
	fs.StringSliceVar(&s.BlockedNetworks, FlagBlocked, d.BlockedNetworks, "CIDRs no registry connection may reach; the pods naming a registry there are released unplaced at once (spec.imageInspection.blockedNetworks).")
	fs.StringSliceVar(&s.AllowedRegistries, FlagAllowed, d.AllowedRegistries, "The only registries whose images are inspected (host[:port] or *.domain); the pods naming another are released unplaced at once (spec.imageInspection.allowedRegistries). Empty allows every registry.")
}
