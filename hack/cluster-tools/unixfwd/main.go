// Command unixfwd relays TCP connections across the cluster's network namespace through a Unix
// socket in its state directory (a filesystem object, visible from both namespaces):
//
//	unixfwd listen-unix SOCKET TCPADDR   inside: accept on SOCKET, dial TCPADDR
//	unixfwd listen-tcp TCPADDR SOCKET    host:   accept on TCPADDR (loopback), dial SOCKET
//
// This is how the host reaches the apiserver without a veth, route or iptables rule on the
// host. Hand-written because it is a few lines of io.Copy and no library ships it.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: unixfwd listen-unix SOCKET TCPADDR | listen-tcp TCPADDR SOCKET")
		os.Exit(2)
	}
	var lnet, dnet string
	switch os.Args[1] {
	case "listen-unix":
		lnet, dnet = "unix", "tcp"
		_ = os.Remove(os.Args[2]) // a stale socket of a killed run
	case "listen-tcp":
		lnet, dnet = "tcp", "unix"
	default:
		fmt.Fprintf(os.Stderr, "unixfwd: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
	l, err := net.Listen(lnet, os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "unixfwd:", err)
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "unixfwd:", err)
			os.Exit(1)
		}
		go relay(c, dnet, os.Args[3])
	}
}

func relay(c net.Conn, network, addr string) {
	defer func() { _ = c.Close() }()
	d, err := net.Dial(network, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "unixfwd:", err)
		return
	}
	defer func() { _ = d.Close() }()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(d, c); closeWrite(d) }()
	go func() { defer wg.Done(); _, _ = io.Copy(c, d); closeWrite(c) }()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
