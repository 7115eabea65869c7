package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/archgate/archgate/operator/internal/credentials"
)

// TestRegistryInspectorMirrorCredentials: an inspection that registries.conf redirects to a
// mirror authenticates there with the mirror's entry of the auth file (the controller's
// --auth-file, rendered from imageInspection.mirrorCredentialsSecretRef), and the pod's own
// credential, meant for the primary registry, never reaches the mirror.
func TestRegistryInspectorMirrorCredentials(t *testing.T) {
	for scheme, opt := range map[string]func(user, pass string) registryOption{
		"basic":  withBasicAuth,
		"bearer": withBearerAuth,
	} {
		t.Run(scheme, func(t *testing.T) { testRegistryInspectorMirrorCredentials(t, opt) })
	}
}

func testRegistryInspectorMirrorCredentials(t *testing.T, auth func(user, pass string) registryOption) {
	const podPassword, mirrorPassword = "pod-password", "mirror-password"
	podCred := credentials.Candidates{{Auth: credentials.AuthConfig{Username: "tenant", Password: podPassword},
		Source: credentials.Source{Namespace: "team-a", Name: "pull"}}}
	tests := map[string]struct {
		primaryDown bool // else the primary runs, wants the pod's credential, and lacks the image
		authFile    map[string]string
		creds       credentials.Candidates
		// wantRefused: the mirror refuses the inspection. Podman reports the primary's error
		// (here: down) and names the mirrors' failures in its message.
		wantRefused bool
	}{
		"primary down, mirror credential in the auth file": {primaryDown: true, authFile: map[string]string{"{mirror}": "mirror:" + mirrorPassword}, creds: podCred},
		"primary without the image":                        {authFile: map[string]string{"{mirror}": "mirror:" + mirrorPassword}, creds: podCred},
		"anonymous pod":                                    {primaryDown: true, authFile: map[string]string{"{mirror}": "mirror:" + mirrorPassword}},
		"mirror credential under a path of the mirror":     {primaryDown: true, authFile: map[string]string{"{mirror}/team": "mirror:" + mirrorPassword}, creds: podCred},
		"no auth file: the pod's credential is not sent":   {primaryDown: true, creds: podCred, wantRefused: true},
		"an entry for another host only":                   {primaryDown: true, authFile: map[string]string{"other.example": "mirror:" + mirrorPassword}, creds: podCred, wantRefused: true},
		"a wrong mirror password":                          {primaryDown: true, authFile: map[string]string{"{mirror}": "mirror:wrong"}, creds: podCred, wantRefused: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mirror := newTestRegistry(t, auth("mirror", mirrorPassword))
			mirror.pushIndex("team/app:1", testIndex(t, formatOCI,
				indexEntry{os: "linux", arch: "arm64"},
				indexEntry{os: "linux", arch: "s390x"},
			))
			var primary string
			var primaryReg *testRegistry
			if tc.primaryDown {
				primary = closedAddress(t)
			} else {
				primaryReg = newTestRegistry(t, auth("tenant", podPassword))
				primary = primaryReg.host
			}
			cfg := newPodmanConfig(t, sprintfConf("[[registry]]\nlocation = \"%s\"\n\n[[registry.mirror]]\nlocation = \"%s\"\n", primary, mirror.host))
			cfg.trust(t, mirror)
			if primaryReg != nil {
				cfg.trust(t, primaryReg)
			}
			opts := cfg.options()
			if tc.authFile != nil {
				auths := map[string]map[string]string{}
				for host, userPass := range tc.authFile {
					host = strings.ReplaceAll(host, "{mirror}", mirror.host)
					auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(userPass))}
				}
				opts.AuthFilePath = writeAuthFile(t, auths)
			}
			insp := mustInspector(t, opts)

			got, err := insp.Architectures(context.Background(), primary+"/team/app:1", tc.creds)
			if _, sent := mirror.passwords.Load(podPassword); sent {
				t.Error("the pod's credential reached the mirror")
			}
			if tc.wantRefused {
				if err == nil || !strings.Contains(err.Error(), "mirrors also failed: "+mirror.host) {
					t.Fatalf("Architectures() error = %v, want the mirror's refusal", err)
				}
				if mirror.requests.Load() == 0 {
					t.Error("the mirror was never asked")
				}
				return
			}
			if err != nil {
				t.Fatalf("Architectures() error = %v", err)
			}
			if diff := cmp.Diff([]string{"arm64", "s390x"}, got.Architectures); diff != "" {
				t.Errorf("Architectures() mismatch (-want +got):\n%s", diff)
			}
			if mirror.manifestGets.Load() == 0 {
				t.Error("the mirror served no manifest")
			}
			if _, sent := mirror.passwords.Load(mirrorPassword); !sent {
				t.Error("the mirror never got the auth file's credential")
			}
			if primaryReg != nil {
				if _, sent := primaryReg.passwords.Load(mirrorPassword); sent {
					t.Error("the mirror's credential reached the primary registry")
				}
			}
		})
	}
}

// writeAuthFile writes an auth file (the format of a .dockerconfigjson) of auths by registry key.
func writeAuthFile(t *testing.T, auths map[string]map[string]string) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
