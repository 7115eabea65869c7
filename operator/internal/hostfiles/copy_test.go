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

package hostfiles

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const hostPath = "/etc/kubernetes/azure.json"

// copied is what a copy looks like on disk.
type copied struct {
	Content  string
	Mode     os.FileMode
	UID, GID uint32
}

// TestCopy runs Copy as the current user (root gives the copy to 65532:65532, the controller's
// user, as the init container does; another user gives it to itself) from one temporary
// directory to another and checks each copy's content, mode and owner, and each refusal.
func TestCopy(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 65532, 65532
	}
	content := `{"aadClientId": "id", "aadClientSecret": "secret"}`
	tests := map[string]struct {
		// setup prepares the source file "0" in from and anything in to.
		setup     func(t *testing.T, from, to string)
		name      string // File.Name; "0" when empty
		wantCopy  *copied
		wantError string // "" for none; the message after "host file <hostPath>: "
	}{
		"a root-only file": {
			setup:    func(t *testing.T, from, _ string) { writeFile(t, filepath.Join(from, "0"), content, 0o600) },
			wantCopy: &copied{Content: content, Mode: Mode, UID: uint32(uid), GID: uint32(gid)},
		},
		"exactly the bound": {
			setup: func(t *testing.T, from, _ string) {
				writeFile(t, filepath.Join(from, "0"), strings.Repeat("x", MaxSize), 0o600)
			},
			wantCopy: &copied{Content: strings.Repeat("x", MaxSize), Mode: Mode, UID: uint32(uid), GID: uint32(gid)},
		},
		"an earlier copy is replaced": {
			setup: func(t *testing.T, from, to string) {
				writeFile(t, filepath.Join(from, "0"), content, 0o600)
				writeFile(t, filepath.Join(to, "0"), "old", 0o400)
			},
			wantCopy: &copied{Content: content, Mode: Mode, UID: uint32(uid), GID: uint32(gid)},
		},
		"a link at the copy's place is replaced, not written through": {
			setup: func(t *testing.T, from, to string) {
				writeFile(t, filepath.Join(from, "0"), content, 0o600)
				if err := os.Symlink(filepath.Join(from, "elsewhere"), filepath.Join(to, "0")); err != nil {
					t.Fatal(err)
				}
			},
			wantCopy: &copied{Content: content, Mode: Mode, UID: uint32(uid), GID: uint32(gid)},
		},
		"missing": {
			setup:     func(*testing.T, string, string) {},
			wantError: "0: no such file or directory",
		},
		"over the bound": {
			setup: func(t *testing.T, from, _ string) {
				writeFile(t, filepath.Join(from, "0"), strings.Repeat("x", MaxSize+1), 0o600)
			},
			wantError: "0 is larger than 65536 bytes",
		},
		"a symbolic link": {
			setup: func(t *testing.T, from, _ string) {
				writeFile(t, filepath.Join(from, "target"), content, 0o600)
				if err := os.Symlink(filepath.Join(from, "target"), filepath.Join(from, "0")); err != nil {
					t.Fatal(err)
				}
			},
			wantError: "0 is a symbolic link, which is not followed",
		},
		"a directory": {
			setup: func(t *testing.T, from, _ string) {
				if err := os.Mkdir(filepath.Join(from, "0"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			wantError: "0 is not a regular file (mode drwx------)",
		},
		"a FIFO does not hang": {
			setup: func(t *testing.T, from, _ string) {
				if err := syscall.Mkfifo(filepath.Join(from, "0"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantError: "0 is not a regular file (mode prw-------)",
		},
		"a name with a path": {
			setup:     func(t *testing.T, from, _ string) { writeFile(t, filepath.Join(from, "0"), content, 0o600) },
			name:      "../0",
			wantError: `name "../0" is not a plain file name`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			from, to := t.TempDir(), t.TempDir()
			tc.setup(t, from, to)
			fileName := tc.name
			if fileName == "" {
				fileName = "0"
			}
			err := Copy(Options{FromDir: from, ToDir: to, Files: []File{{Name: fileName, HostPath: hostPath}}, UID: uid, GID: gid})
			gotError := ""
			if err != nil {
				gotError = err.Error()
			}
			switch {
			case tc.wantError == "" && err != nil:
				t.Fatalf("Copy: %v", err)
			case tc.wantError != "" && (!strings.HasPrefix(gotError, "host file "+hostPath+": ") || !strings.HasSuffix(gotError, tc.wantError)):
				t.Fatalf("Copy error %q, want host file %s: ...%s", gotError, hostPath, tc.wantError)
			}
			if diff := cmp.Diff(tc.wantCopy, readCopy(t, filepath.Join(to, "0"))); diff != "" {
				t.Errorf("copy (-want +got):\n%s", diff)
			}
			if leftovers := entries(t, to); len(leftovers) > 1 || (len(leftovers) == 1 && leftovers[0] != "0") {
				t.Errorf("%s holds %v, want the copy only", to, leftovers)
			}
		})
	}
}

// TestCopyAllFilesNamed: every file that cannot be copied is named in one error, and the
// others are copied.
func TestCopyAllFilesNamed(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(from, "1"), "ok", 0o600)
	err := Copy(Options{FromDir: from, ToDir: to, UID: os.Getuid(), GID: os.Getgid(), Files: []File{
		{Name: "0", HostPath: "/etc/a.json"}, {Name: "1", HostPath: "/etc/b.json"}, {Name: "2", HostPath: "/etc/c.json"}}})
	if err == nil || !strings.Contains(err.Error(), "host file /etc/a.json: ") || !strings.Contains(err.Error(), "host file /etc/c.json: ") {
		t.Errorf("error %v, want both missing files named", err)
	}
	if got := readCopy(t, filepath.Join(to, "1")); got == nil || got.Content != "ok" {
		t.Errorf("copy of /etc/b.json: %+v", got)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the umask may have taken bits away
		t.Fatal(err)
	}
}

// readCopy returns the regular file at path, nil when there is none.
func readCopy(t *testing.T, path string) *copied {
	t.Helper()
	info, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if !info.Mode().IsRegular() {
		t.Fatalf("%s: mode %s, want a regular file", path, info.Mode())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	return &copied{Content: string(data), Mode: info.Mode(), UID: st.Uid, GID: st.Gid}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(list))
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

// copyOptionsEnv, when set, makes the test binary run Copy with the JSON Options it holds and
// exit: TestCopyCapabilities runs it so under setpriv.
const copyOptionsEnv = "ARCHGATE_TEST_HOSTFILES_COPY"

func TestMain(m *testing.M) {
	if raw := os.Getenv(copyOptionsEnv); raw != "" {
		var o Options
		if err := json.Unmarshal([]byte(raw), &o); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(2)
		}
		if err := Copy(o); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCopyCapabilities runs Copy as root with only the capabilities given (setpriv's bounding
// set, no new privileges), as the init container of the controller's Deployment runs it:
// CHOWN gives the copy to the controller's user, DAC_READ_SEARCH reads a file another user
// owns without read bits for others (root reads its own 0600 file without it). Needs root and
// setpriv; skipped otherwise.
func TestCopyCapabilities(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		t.Skip("needs root and setpriv")
	}
	tests := map[string]struct {
		caps      string
		owner     int // of the source file, mode 0600
		wantError string
	}{
		"the init container's: another user's file":    {caps: "+chown,+dac_read_search", owner: 1000},
		"the init container's: root's own file":        {caps: "+chown,+dac_read_search", owner: 0},
		"without DAC_READ_SEARCH, root's own file":     {caps: "+chown", owner: 0},
		"without DAC_READ_SEARCH, another user's file": {caps: "+chown", owner: 1000, wantError: "permission denied"},
		"without CHOWN": {caps: "+dac_read_search", owner: 0, wantError: "operation not permitted"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			from, to := t.TempDir(), t.TempDir()
			// The directories as the pod has them: the mount point root's, the emptyDir 0777.
			if err := os.Chmod(from, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(to, 0o777); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(from, "0"), "secret", 0o600)
			if err := os.Chown(filepath.Join(from, "0"), tc.owner, tc.owner); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(Options{FromDir: from, ToDir: to, Files: []File{{Name: "0", HostPath: hostPath}}, UID: 65532, GID: 65532})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(setpriv, "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all,"+tc.caps, "--", os.Args[0])
			cmd.Env = append(os.Environ(), copyOptionsEnv+"="+string(raw))
			out, err := cmd.CombinedOutput()
			switch {
			case tc.wantError == "" && err != nil:
				t.Fatalf("with %s: %v: %s", tc.caps, err, out)
			case tc.wantError != "" && !strings.Contains(string(out), tc.wantError):
				t.Fatalf("with %s: %v %q, want an error containing %q", tc.caps, err, out, tc.wantError)
			case tc.wantError == "":
				want := &copied{Content: "secret", Mode: Mode, UID: 65532, GID: 65532}
				if diff := cmp.Diff(want, readCopy(t, filepath.Join(to, "0"))); diff != "" {
					t.Errorf("copy (-want +got):\n%s", diff)
				}
			}
		})
	}
}
