// Command localk8s runs the local provider's single-node cluster by hand:
//
//	go run ./cmd/localk8s up      # start, print the kubeconfig, run until Ctrl-C, then delete
//	go run ./cmd/localk8s wipe    # remove the leftovers of a killed run (alias: down)
//	go run ./cmd/localk8s status  # list what a wipe would remove
//
// With -registry HOST[:PORT] the node's containerd pulls from that private
// registry as a cluster owner's node configuration would: trusting
// -registry-ca and presenting the credentials `docker login` wrote
// ($DOCKER_CONFIG/config.json or ~/.docker/config.json). The suite's
// -provider=existing runs against such a cluster.
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
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/meshclaims/meshclaims/framework/localk8s"
)

func main() {
	fs := flag.NewFlagSet("localk8s", flag.ExitOnError)
	name := fs.String("name", "meshclaims", "cluster name")
	state := fs.String("state", "", "state directory (default "+localk8s.DefaultStateRoot+"/<name>)")
	keep := fs.Bool("keep-state", false, "keep the state directory on exit")
	noNetpol := fs.Bool("no-netpol", false, "do not run kube-router (NetworkPolicy not enforced)")
	registry := fs.String("registry", "", "a private registry host[:port] the node pulls from, with the credentials of the docker config")
	registryCA := fs.String("registry-ca", "", "PEM CA the node trusts for -registry")
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: localk8s up|down|wipe|status [flags]")
		os.Exit(2)
	}
	cmd := os.Args[1]
	_ = fs.Parse(os.Args[2:])
	cfg := localk8s.Config{Name: *name, StateDir: *state, KeepState: *keep, DisableNetworkPolicy: *noNetpol}
	if *registry != "" {
		r, err := nodeRegistry(*registry, *registryCA)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cfg.Registries = append(cfg.Registries, r)
	} else if *registryCA != "" {
		fmt.Fprintf(os.Stderr, "-registry-ca=%q without -registry\n", *registryCA)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runCmd(ctx, cmd, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// nodeRegistry reads host's credentials the way the suite reads them (the
// default keychain: the docker config and its credential helpers).
func nodeRegistry(host, ca string) (localk8s.NodeRegistry, error) {
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return localk8s.NodeRegistry{}, fmt.Errorf("-registry=%q: %w", host, err)
	}
	if ca != "" {
		if ca, err = filepath.Abs(ca); err != nil {
			return localk8s.NodeRegistry{}, err
		}
	}
	a, err := authn.DefaultKeychain.Resolve(reg)
	if err != nil {
		return localk8s.NodeRegistry{}, fmt.Errorf("-registry=%q: credentials: %w", host, err)
	}
	c, err := authn.Authorization(context.Background(), a)
	if err != nil {
		return localk8s.NodeRegistry{}, fmt.Errorf("-registry=%q: credentials: %w", host, err)
	}
	if c.Username == "" {
		return localk8s.NodeRegistry{}, fmt.Errorf("-registry=%q: no username and password for it in $DOCKER_CONFIG/config.json or ~/.docker/config.json; run `docker login %s` (or write the auths entry) first", host, host)
	}
	return localk8s.NodeRegistry{Host: host, CAFile: ca, Username: c.Username, Password: c.Password}, nil
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
