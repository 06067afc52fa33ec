// Command localk8s runs the local provider's single-node cluster by hand:
//
//	go run ./cmd/localk8s up      # start, print the kubeconfig, run until Ctrl-C, then delete
//	go run ./cmd/localk8s wipe    # remove the leftovers of a killed run (alias: down)
//	go run ./cmd/localk8s status  # list what a wipe would remove
//
// The cluster's processes are children of this command and die with it, as
// they die with the test binary in a suite run. Root on Linux only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/meshclaims/meshclaims/framework/localk8s"
)

func main() {
	fs := flag.NewFlagSet("localk8s", flag.ExitOnError)
	name := fs.String("name", "meshclaims", "cluster name")
	state := fs.String("state", "", "state directory (default "+localk8s.DefaultStateRoot+"/<name>)")
	keep := fs.Bool("keep-state", false, "keep the state directory on exit")
	noNetpol := fs.Bool("no-netpol", false, "do not run kube-router (NetworkPolicy not enforced)")
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: localk8s up|down|wipe|status [flags]")
		os.Exit(2)
	}
	cmd := os.Args[1]
	_ = fs.Parse(os.Args[2:])
	cfg := localk8s.Config{Name: *name, StateDir: *state, KeepState: *keep, DisableNetworkPolicy: *noNetpol}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runCmd(ctx, cmd, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func runCmd(ctx context.Context, cmd string, cfg localk8s.Config) error {
	switch cmd {
	case "up":
		k, err := localk8s.New(cfg)
		if err != nil {
			return err
		}
		k.Logf = func(f string, a ...any) {
			fmt.Printf("%s "+f+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
		}
		t0 := time.Now()
		err = k.Start(ctx)
		if err == nil {
			fmt.Printf("cluster up in %s; export KUBECONFIG=%s; Ctrl-C deletes it\n", time.Since(t0).Round(time.Second), k.KubeconfigPath())
			<-ctx.Done()
		}
		fmt.Println("deleting the cluster")
		if derr := k.Delete(context.Background()); derr != nil {
			return fmt.Errorf("%v; delete: %w", err, derr)
		}
		return err
	case "wipe", "down":
		// The processes belong to the `up` command (they die with it); down
		// and wipe remove whatever a killed `up` left behind.
		c, err := cfg.Defaults()
		if err != nil {
			return err
		}
		return localk8s.Wipe(ctx, c)
	case "status":
		c, err := cfg.Defaults()
		if err != nil {
			return err
		}
		s, err := localk8s.Observe(ctx, c)
		if err != nil {
			return err
		}
		plan := localk8s.PlanWipe(s, c, os.Getpid())
		if plan.Empty() {
			fmt.Println("nothing of a local cluster on this host")
			return nil
		}
		fmt.Println(plan)
		return nil
	default:
		return fmt.Errorf("unknown command %q; accepted: up, down, wipe, status", cmd)
	}
}
