package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one polling reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns the content so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServeStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	certs := t.TempDir()
	out := &syncBuffer{}
	cmd := newRootCommand()
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs([]string{"serve", "--catalog", "../../testdata/catalog.yaml", "--addr", "127.0.0.1:0", "--tls", "--certs-dir", certs})
	errc := make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	for i := 0; !strings.Contains(out.String(), "CA written to"); i++ {
		if i == 1000 {
			t.Fatalf("serve did not start; output:\n%s", out.String())
		}
		select {
		case err := <-errc:
			t.Fatalf("serve exited early: %v\n%s", err, out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(out.String(), "/library/multi:latest  oci-index  sha256:") {
		t.Errorf("output lacks the image list:\n%s", out.String())
	}
	matches, err := filepath.Glob(filepath.Join(certs, "127.0.0.1:*", "ca.crt"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("ca.crt files = %v (%v), want one for 127.0.0.1", matches, err)
	}
	if _, err := os.Stat(matches[0]); err != nil {
		t.Errorf("stat ca.crt: %v", err)
	}
}

func TestServeRequiresCatalog(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"serve"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "catalog") {
		t.Fatalf("error = %v, want the missing --catalog flag", err)
	}
}
