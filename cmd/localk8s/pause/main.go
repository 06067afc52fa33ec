// Command pause is the local provider's pod sandbox ("infra") process: it
// holds the pod's namespaces, reaps zombies (it is PID 1 of the pod when the
// pod shares its PID namespace) and exits on SIGINT or SIGTERM. It replaces
// registry.k8s.io/pause, which cannot be pulled where no registry is
// reachable; framework/localk8s packs it into an image and imports it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
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
