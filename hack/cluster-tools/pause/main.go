// Command pause is the cluster's pod sandbox image entrypoint: it holds the pod's namespaces
// open until told to stop. Written here because the real-node cluster pulls nothing from the
// internet, so registry.k8s.io/pause is not available; it only needs to block and to exit
// on SIGTERM/SIGINT like the upstream one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
