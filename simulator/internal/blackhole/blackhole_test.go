package blackhole

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestHostNeverAnswers checks that a client's request gets no answer until
// its own deadline, that the connection was accepted, and that Close ends
// the held connections.
func TestHostNeverAnswers(t *testing.T) {
	h, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.Addr()+"/v2/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got an answer, %s", resp.Status)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the client's deadline", err)
	}
	if h.Accepted() != 1 {
		t.Errorf("accepted %d connections, want 1", h.Accepted())
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
