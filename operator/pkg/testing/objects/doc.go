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

// Package objects builds the Kubernetes objects tests create: pods, Deployments,
// PodPlacementConfigs and pull secrets, one builder style for the operator's and the
// simulator's tests (cluster-api's: objects.Pod(ns, name).WithImage(img).WithGate().Build()).
//
// A builder starts from the bare object (namespace and name only); each With… sets one
// thing and returns the builder; Build returns a deep copy, so one builder may be built
// from several times. Only tests and test harnesses may import it
// (TestOnlyTestsImportTheHarness holds production code to that).
package objects
