package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
)

func TestWritePIDFile(t *testing.T) {
	dir := t.TempDir()
	ids := []procfs.ID{{PID: 10, Start: 100}, {PID: 11, Start: 101}}
	tests := map[string]struct {
		path      string
		wantErr   string
		wantLines string
	}{
		"written":                    {path: filepath.Join(dir, "1.pids"), wantLines: "10 100\n11 101\n"},
		"unwritable: a directory":    {path: dir, wantErr: "recording the control plane's processes for orphan cleanup"},
		"unwritable: missing parent": {path: filepath.Join(dir, "gone", "1.pids"), wantErr: "gone/1.pids"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := writePIDFile(tc.path, ids)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("writePIDFile() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantLines {
				t.Errorf("file = %q, want %q", got, tc.wantLines)
			}
		})
	}
}
