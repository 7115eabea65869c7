// Package blackhole is a host that accepts TCP connections and never
// answers: what a hostile tenant's registry looks like to a client that
// waits for its TLS handshake or HTTP response. Each connection is held,
// its bytes read and dropped, until the client closes it or the host
// closes.
package blackhole

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Host is a listening black hole.
type Host struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// Listen starts a black hole on a free loopback port.
func Listen() (*Host, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &Host{ln: ln, conns: map[net.Conn]struct{}{}}
	h.wg.Add(1)
	go h.accept()
	return h, nil
}

// Addr is the host's host:port.
func (h *Host) Addr() string { return h.ln.Addr().String() }

// Accepted counts the connections accepted so far.
func (h *Host) Accepted() int64 { return h.accepted.Load() }

// accept holds every connection until it ends or the host closes.
func (h *Host) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			_ = c.Close()
			return
		}
		h.conns[c] = struct{}{}
		h.mu.Unlock()
		h.accepted.Add(1)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			_, _ = io.Copy(io.Discard, c) // until the client or Close ends it
			h.mu.Lock()
			delete(h.conns, c)
			h.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// Close stops listening, drops every held connection and waits for them.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	for c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	err := h.ln.Close()
	h.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
