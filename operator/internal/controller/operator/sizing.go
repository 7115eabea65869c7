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
	cpuRequest, memoryRequest, memoryLimit string
	// gcPercent is GOGC; 0 leaves the runtime's default (100).
	gcPercent int
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
		return sizing{cpuRequest: "50m", memoryRequest: "64Mi", memoryLimit: "512Mi", gcPercent: 25}
	case componentController:
		// gated-10k: 79 MiB RSS per replica at 10,000 gated pods with the runtime's GOGC and a
		// cache of the gated pods' metadata, 67 MiB with GOGC 25 for a third more controller CPU
		// (0.77 against 1.03 CPU-s per 1,000 pods); 131 MiB with a cache of typed pod views.
		// 36 MiB of it the binary's pages.
		return sizing{cpuRequest: "50m", memoryRequest: "128Mi", memoryLimit: "512Mi"}
	default:
		// The webhook keeps nothing per pod: 52 MiB RSS per replica under a 10,000-pod burst
		// (16 MiB the Go heap and runtime, 36 MiB the binary's pages).
		return sizing{cpuRequest: "50m", memoryRequest: "64Mi", memoryLimit: "256Mi", gcPercent: 50}
	}
}

// resources are the container's resource requests and limits.
func (s sizing) resources() *corev1ac.ResourceRequirementsApplyConfiguration {
	return corev1ac.ResourceRequirements().
		WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpuRequest), corev1.ResourceMemory: resource.MustParse(s.memoryRequest)}).
		WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(s.memoryLimit)})
}

// runtimeEnv is the Go runtime's environment: GOMEMLIMIT from the memory limit, and GOGC.
func (s sizing) runtimeEnv() []*corev1ac.EnvVarApplyConfiguration {
	limit := resource.MustParse(s.memoryLimit)
	env := []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName("GOMEMLIMIT").WithValue(goMemLimit(limit.Value())),
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
