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
	"github.com/archgate/archgate/operator/internal/controller/execformatmonitor"
	"github.com/archgate/archgate/operator/internal/controller/podplacement"
	"github.com/archgate/archgate/operator/internal/inspect"
	gatewebhook "github.com/archgate/archgate/operator/internal/webhook"
)

// Metric and label names the components export, for readers outside the operator: the
// simulator reads these to report cache hits, inspections and webhook decisions. They are the
// constants the metrics are defined with, so a rename on the operator's side changes the
// reader too, and a metric removed makes the reader fail to compile or report it missing.
const (
	// MetricInspectCacheHits and MetricInspectCacheMisses count cache lookups by LabelCache.
	MetricInspectCacheHits   = inspect.MetricCacheHits
	MetricInspectCacheMisses = inspect.MetricCacheMisses
	// MetricInspectCacheDedupWaits counts misses that waited for an inspection in flight.
	MetricInspectCacheDedupWaits = inspect.MetricCacheDedupWaits
	// MetricInspectDuration is a histogram of registry inspections by LabelOutcome.
	MetricInspectDuration = inspect.MetricDuration
	// MetricInspectErrors counts failed inspections by LabelReason.
	MetricInspectErrors = inspect.MetricErrors

	// MetricPlacementPhaseDuration is a histogram of the time a placement reconcile spends
	// in each phase, by LabelPlacementPhase (config, credentials, inspection, placement, patch).
	MetricPlacementPhaseDuration = podplacement.MetricReconcilePhaseDuration
	LabelPlacementPhase          = podplacement.LabelPhase

	// MetricWebhookPodsGated counts pods given the gate; MetricWebhookPodsSkipped admission
	// requests let through unchanged, by LabelReason.
	MetricWebhookPodsGated   = gatewebhook.MetricPodsGated
	MetricWebhookPodsSkipped = gatewebhook.MetricPodsSkipped

	// MetricExecFormatErrorPods counts the pods the exec-format-error monitor reported, by
	// LabelExecFormatNamespace and LabelExecFormatArchitecture (the node's architecture).
	MetricExecFormatErrorPods = execformatmonitor.MetricPodsDetected
	// MetricExecFormatErrorPodDeletions counts the reported pods deleted (action DeletePod), by
	// namespace and result.
	MetricExecFormatErrorPodDeletions = execformatmonitor.MetricPodsDeleted
	LabelExecFormatNamespace          = execformatmonitor.LabelNamespace
	LabelExecFormatArchitecture       = execformatmonitor.LabelArchitecture

	// LabelCache, LabelOutcome and LabelInspectReason label the inspection metrics above,
	// LabelWebhookReason the webhook's.
	LabelCache         = inspect.LabelCache
	LabelOutcome       = inspect.LabelOutcome
	LabelInspectReason = inspect.LabelReason
	LabelWebhookReason = gatewebhook.LabelReason
)
