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

package operator

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// sizing is a component's container resources and the Go runtime settings rendered with them.
//
// Two environment variables tune the Go runtime of each component:
//   - GOMEMLIMIT, a soft limit at softLimitPercent of the container's memory limit: the garbage
//     collector works harder as the runtime's memory nears it, so that a live set that outgrows
//     the request is collected before the kernel kills the container.
//   - GOGC, the heap growth between collections. It, not GOMEMLIMIT, sets the footprint: the
//     controller's live set grows with the number of gated pods (its cache holds the metadata
//     of each gated pod), so a fixed soft limit low enough to hold 10,000 gated pods near the
//     live set would make the collector run without pause beyond that, while a lower GOGC
//     keeps the heap at a fixed multiple of the live set at every size, for a GC CPU cost that
//     grows with the allocation rate and not with the cluster (gated-10k measures both).
type sizing struct {
	requirements corev1.ResourceRequirements
	// gcPercent is GOGC; 0 leaves the runtime's default (100).
	gcPercent int
}

// defaultSizing is a CPU and memory request and a memory limit (no CPU limit: a throttled
// webhook adds its wait to every pod creation).
func defaultSizing(cpuRequest, memoryRequest, memoryLimit string, gcPercent int) sizing {
	return sizing{
		requirements: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest), corev1.ResourceMemory: resource.MustParse(memoryRequest)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memoryLimit)},
		},
		gcPercent: gcPercent,
	}
}

// withResources replaces the container resources with those a ClusterPodPlacementConfig sets
// (spec.components), as a whole; nil keeps the defaults. GOGC stays: it shapes the heap, not
// its bound.
func (s sizing) withResources(r *corev1.ResourceRequirements) sizing {
	if r != nil {
		s.requirements = *r.DeepCopy()
	}
	return s
}

// softLimitPercent is GOMEMLIMIT as a share of the container's memory limit: the rest is
// left for what the Go runtime does not count (the binary's mapped pages, about 36 MiB).
const softLimitPercent = 90

// componentSizing is the sizing of the component (a value of componentOf).
func componentSizing(component string) sizing {
	switch component {
	case componentLocalController:
		// A namespace's own controller caches that namespace's gated pods only
		// (docs/local-placement.md: 48 MiB per process).
		return defaultSizing("50m", "64Mi", "512Mi", 25)
	case componentController:
		// gated-10k: 79 MiB RSS per replica at 10,000 gated pods with the runtime's GOGC and a
		// cache of the gated pods' metadata, 67 MiB with GOGC 25 for a third more controller CPU
		// (0.77 against 1.03 CPU-s per 1,000 pods); 131 MiB with a cache of typed pod views.
		// 36 MiB of it the binary's pages.
		return defaultSizing("50m", "128Mi", "512Mi", 0)
	default:
		// The webhook keeps nothing per pod: 52 MiB RSS per replica under a 10,000-pod burst
		// (16 MiB the Go heap and runtime, 36 MiB the binary's pages).
		return defaultSizing("50m", "64Mi", "256Mi", 50)
	}
}

// resources are the container's resource requests and limits.
func (s sizing) resources() *corev1ac.ResourceRequirementsApplyConfiguration {
	r := corev1ac.ResourceRequirements()
	if len(s.requirements.Requests) > 0 {
		r.WithRequests(s.requirements.Requests)
	}
	if len(s.requirements.Limits) > 0 {
		r.WithLimits(s.requirements.Limits)
	}
	for _, c := range s.requirements.Claims {
		r.WithClaims(corev1ac.ResourceClaim().WithName(c.Name).WithRequest(c.Request))
	}
	return r
}

// runtimeEnv is the Go runtime's environment: GOMEMLIMIT from the memory limit (none without
// one), and GOGC.
func (s sizing) runtimeEnv() []*corev1ac.EnvVarApplyConfiguration {
	var env []*corev1ac.EnvVarApplyConfiguration
	if limit, ok := s.requirements.Limits[corev1.ResourceMemory]; ok && limit.Value() > 0 {
		env = append(env, corev1ac.EnvVar().WithName("GOMEMLIMIT").WithValue(goMemLimit(limit.Value())))
	}
	if s.gcPercent > 0 {
		env = append(env, corev1ac.EnvVar().WithName("GOGC").WithValue(strconv.Itoa(s.gcPercent)))
	}
	return env
}

// goMemLimit is GOMEMLIMIT for a container memory limit of limitBytes: softLimitPercent of
// it, in whole MiB (a unit the Go runtime parses).
func goMemLimit(limitBytes int64) string {
	return strconv.FormatInt(limitBytes*softLimitPercent/100>>20, 10) + "MiB"
}
