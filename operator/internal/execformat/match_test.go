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

package execformat

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func terminated(reason, msg string, code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, Message: msg, ExitCode: code}}
}

func waiting(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

func TestMatch(t *testing.T) {
	crashLoop := waiting("CrashLoopBackOff", "back-off 10s restarting failed container=app pod=web-0_team(5c1f)")
	tests := map[string]struct {
		state, last corev1.ContainerState
		want        *Finding
	}{
		"runc 1.1+ via containerd, FallbackToLogsOnError": {
			state: terminated("Error", "exec /app: exec format error\n", 1),
			want:  &Finding{Reason: "Error", Message: "exec /app: exec format error\n", ExitCode: 1},
		},
		"runc 1.1+ after the restart: CrashLoopBackOff with the report in lastState": {
			state: crashLoop,
			last:  terminated("Error", "exec /hello: exec format error", 1),
			want:  &Finding{Reason: "Error", Message: "exec /hello: exec format error", ExitCode: 1},
		},
		"runc 1.0": {
			state: terminated("Error", "standard_init_linux.go:228: exec user process caused: exec format error", 1),
			want:  &Finding{Reason: "Error", Message: "standard_init_linux.go:228: exec user process caused: exec format error", ExitCode: 1},
		},
		"runc before 1.0, quoted": {
			state: terminated("Error", `standard_init_linux.go:211: exec user process caused "exec format error"`, 1),
			want:  &Finding{Reason: "Error", Message: `standard_init_linux.go:211: exec user process caused "exec format error"`, ExitCode: 1},
		},
		"containerd StartError from runc create": {
			state: terminated("StartError", `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/app": exec format error: unknown`, 128),
			want: &Finding{Reason: "StartError", ExitCode: 128,
				Message: `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/app": exec format error: unknown`},
		},
		"containerd RunContainerError while waiting": {
			state: waiting("RunContainerError", `failed to start containerd task "app": OCI runtime start failed: exec format error: unknown`),
			want:  &Finding{Reason: "RunContainerError", Message: `failed to start containerd task "app": OCI runtime start failed: exec format error: unknown`},
		},
		"CRI-O with crun, CreateContainerError": {
			state: waiting("CreateContainerError", "container create failed: exec container process `/app`: Exec format error"),
			want:  &Finding{Reason: "CreateContainerError", Message: "container create failed: exec container process `/app`: Exec format error"},
		},
		"crun in the container log, exit 255": {
			last: terminated("Error", "exec container process `/usr/bin/server`: Exec format error", 255),
			want: &Finding{Reason: "Error", Message: "exec container process `/usr/bin/server`: Exec format error", ExitCode: 255},
		},
		"a shell running a wrong-arch helper": {
			state: terminated("Error", "/entrypoint.sh: line 3: /usr/local/bin/tool: cannot execute binary file: Exec format error", 126),
			want:  &Finding{Reason: "Error", Message: "/entrypoint.sh: line 3: /usr/local/bin/tool: cannot execute binary file: Exec format error", ExitCode: 126},
		},
		"no message: the default terminationMessagePolicy hides it": {
			state: crashLoop,
			last:  terminated("Error", "", 1),
		},
		"exit code 0 with the phrase in the output is not a failure": {
			state: terminated("Completed", "checked: no exec format error found", 0),
		},
		"another crash": {
			state: terminated("Error", "panic: runtime error: index out of range", 2),
		},
		"image pull failure": {
			state: waiting("ErrImagePull", "rpc error: code = NotFound desc = failed to pull and unpack image: no match for platform in manifest: not found"),
		},
		"running": {
			state: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Match(corev1.ContainerStatus{Name: "app", State: tc.state, LastTerminationState: tc.last})
			if tc.want == nil {
				if ok {
					t.Fatalf("matched %+v, want no match", got)
				}
				return
			}
			tc.want.Container = "app"
			if !ok {
				t.Fatal("no match, want one")
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("finding (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFirstFinding(t *testing.T) {
	bad := corev1.ContainerStatus{Name: "bad", State: terminated("Error", "exec /x: exec format error", 1)}
	ok := corev1.ContainerStatus{Name: "ok", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	tests := map[string]struct {
		status corev1.PodStatus
		want   *Finding
	}{
		"none":             {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{ok}}},
		"a main container": {status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{ok, bad}}, want: &Finding{Container: "bad"}},
		"an init container first": {
			status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{bad}, ContainerStatuses: []corev1.ContainerStatus{ok}},
			want:   &Finding{Container: "bad", Init: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, found := FirstFinding(&tc.status)
			if found != (tc.want != nil) {
				t.Fatalf("found %t, want %t", found, tc.want != nil)
			}
			if tc.want != nil && (got.Container != tc.want.Container || got.Init != tc.want.Init) {
				t.Errorf("finding %s init=%t, want %s init=%t", got.Container, got.Init, tc.want.Container, tc.want.Init)
			}
		})
	}
}
