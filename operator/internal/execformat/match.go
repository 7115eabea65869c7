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

// Package execformat recognises containers that failed with an exec format error (ENOEXEC:
// the kernel refused to run a binary built for another CPU architecture) from what the
// container runtime reported in the pod status. The rules are pure functions.
package execformat

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// errorText is the one phrase every runtime's report contains: Go's syscall.ENOEXEC text
// ("exec format error") in runc and containerd, glibc's strerror(ENOEXEC) ("Exec format
// error") in crun and shells. Compared case-insensitively.
const errorText = "exec format error"

// Finding is a container that failed with an exec format error.
type Finding struct {
	// Container names the container; Init marks an init container.
	Container string
	Init      bool
	// Reason and Message are the runtime's report where the error was found (the waiting or
	// terminated state, current or last).
	Reason, Message string
	// ExitCode is the terminated state's exit code; 0 for a waiting state.
	ExitCode int32
}

// Match reports whether the container status shows an exec format error, where the
// runtimes put it:
//
//   - runc ≥ 1.1 (containerd, CRI-O): the container starts, runc's init fails its execve and
//     prints "exec /app: exec format error" to the container's stderr, exit code 1 or 255.
//     The kubelet shows it as terminated{reason: Error} whose message holds that text only
//     with terminationMessagePolicy FallbackToLogsOnError; then waiting{CrashLoopBackOff}
//     with the report in lastState.
//   - runc 1.0 and older: "standard_init_linux.go:228: exec user process caused: exec format
//     error" (or `caused "exec format error"`), same places.
//   - runc or crun failing at create/start time: containerd reports terminated{reason:
//     StartError} or waiting{RunContainerError} with "failed to create shim task: OCI runtime
//     create failed: ... exec format error: unknown"; CRI-O reports waiting{reason:
//     CreateContainerError} with "container create failed: ...".
//   - crun: "exec container process `/app`: Exec format error" (glibc's wording, capitalised).
//
// Only failed states count: a terminated state with exit code 0 (a program that merely
// printed the phrase and succeeded) does not. A container with no message (the default
// terminationMessagePolicy File and a runtime that reported nothing else) cannot be told
// apart from any other crash and does not match.
func Match(s corev1.ContainerStatus) (Finding, bool) {
	for _, st := range []corev1.ContainerState{s.State, s.LastTerminationState} {
		if f, ok := matchState(st); ok {
			f.Container = s.Name
			return f, true
		}
	}
	return Finding{}, false
}

func matchState(st corev1.ContainerState) (Finding, bool) {
	if t := st.Terminated; t != nil && t.ExitCode != 0 && mentions(t.Message) {
		return Finding{Reason: t.Reason, Message: t.Message, ExitCode: t.ExitCode}, true
	}
	if w := st.Waiting; w != nil && mentions(w.Message) {
		return Finding{Reason: w.Reason, Message: w.Message}, true
	}
	return Finding{}, false
}

// mentions reports whether msg contains errorText in any letter case, without allocating a
// lowered copy of messages that can be kilobytes long.
func mentions(msg string) bool {
	for i := 0; i+len(errorText) <= len(msg); i++ {
		if strings.EqualFold(msg[i:i+len(errorText)], errorText) {
			return true
		}
	}
	return false
}

// FirstFinding returns the first container of the pod (init containers first, in status
// order) that failed with an exec format error.
func FirstFinding(status *corev1.PodStatus) (Finding, bool) {
	for _, s := range status.InitContainerStatuses {
		if f, ok := Match(s); ok {
			f.Init = true
			return f, true
		}
	}
	for _, s := range status.ContainerStatuses {
		if f, ok := Match(s); ok {
			return f, true
		}
	}
	return Finding{}, false
}
