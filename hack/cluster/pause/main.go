// Command pause is the local cluster's pause image (the sandbox container
// every pod's containers join): it waits for SIGTERM, SIGINT or SIGHUP and
// exits 0, and reaps the orphans a shared PID namespace hands it. Built
// static (CGO_ENABLED=0) so it runs in an image with nothing else in it;
// testbed/cluster turns it into an OCI image and every node's containerd
// uses that image as its sandbox_image.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("lhcluster pause")
		return
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
