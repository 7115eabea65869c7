// Package fakenodes gives a simulated cluster its nodes: Node objects with no
// process behind them, created Ready with their pool's capacity and labels so
// that the embedded scheduler binds pods to them (nodes.go), and a kubelet
// that only writes pod statuses (kubelet.go). That kubelet runs no
// containers: once per pod bound to a fake node it writes the status a real
// kubelet would report after the first start, running, or an exec format
// error for a pod whose images lack the node's architecture, as its options
// ask. Without it, bound pods stay Pending with no container status.
package fakenodes
