package localk8s

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The node's namespace.
//
// The node's processes (containerd, the kubelet, kube-proxy, kube-router,
// and so every pod) run in a PID and mount namespace of their own, as inside
// a kind node container, while the control plane stays on the host:
//
//   - istio-cni's ambient node agent recognises the host network namespace by
//     stat'ing /proc/1/ns/net under the pods' hostPath /proc. On a host whose
//     init forbids that (this kind of VM), the agent cannot start; in the
//     node's PID namespace PID 1 is the node's init, a process of ours.
//   - containerd accepts a hostPath with HostToContainer propagation only
//     when its mount is shared or a slave. Inside the node's mount namespace
//     / is made rshared; the host's / keeps its own propagation, because the
//     namespace is first cut off from the host's peer groups (rprivate).
//   - The directories istio-cni and ztunnel share with the host
//     (/var/run/netns, /var/run/ztunnel, /var/run/istio-cni) get a tmpfs of
//     the node's own: containerd keeps the pods' network namespaces at
//     /var/run/netns, where istio-cni's agent (which opens the path the
//     plugin reports under its /host mount) finds them, and the host's own
//     /run/netns (`ip netns`) neither sees them nor is seen.
//
// The kubelet must share containerd's PID namespace: containerd reports
// container PIDs as the node sees them and the kubelet's stats read them in
// its /proc. Everything mounted in the node (pod volumes, root filesystems,
// netns bind mounts, the tmpfs above) vanishes with the namespace when its
// init dies; the init dies with the process that started the cluster
// (Pdeathsig) and takes every process of the namespace with it (the kernel
// kills a PID namespace's members when its PID 1 exits).
//
// The init is the binary that runs the cluster, re-executed under the name
// NodeInitName (see the package's init function): nothing to build or
// install. Node components are started in the namespace with util-linux's
// nsenter, whose child inherits nsenter's process group, so the supervisor
// signals the group.

// NodeInitName is the node init's argv[0]; a binary linking this package
// becomes the init when started under that name as PID 1.
const NodeInitName = "meshclaims-node-init"

// NodeInit is the node init's component name (its log file).
const NodeInit = "node-init"

// NodeRunDirs are the host directories that get a tmpfs of the node's own
// inside its mount namespace (istio-cni's and ztunnel's hostPaths, and the
// pods' network namespaces). Start creates a missing one on the host (as a
// mount point); the wipe removes what it created (see HostPaths).
var NodeRunDirs = []string{"/var/run/netns", "/var/run/ztunnel", "/var/run/istio-cni"}

func init() {
	// Only as PID 1 of a new PID namespace: a binary started by hand under
	// that name is not an init and goes on as itself.
	if filepath.Base(os.Args[0]) == NodeInitName && os.Getpid() == 1 {
		os.Exit(runNodeInit(os.Args[1:]))
	}
}

// NodeInitComponent is the init's component: the running binary under the
// name NodeInitName, in new PID and mount namespaces. Its arguments name the
// state directory (which is how the wipe recognises a leftover init).
func NodeInitComponent(c Config) (Component, error) {
	exe, err := os.Executable()
	if err != nil {
		return Component{}, fmt.Errorf("localk8s: the node init re-executes this program: %w", err)
	}
	args := []string{"--ready=" + nodeReadyFile(c)}
	for _, d := range NodeRunDirs {
		args = append(args, "--tmpfs="+d)
	}
	return Component{
		Name: NodeInit, Path: exe, Argv0: NodeInitName, Args: args, StopTimeout: 5,
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
	}, nil
}

func nodeReadyFile(c Config) string { return filepath.Join(c.StateDir, "node-init.ready") }

// InNode wraps comp so that it runs in the node's namespaces (those of the
// init with host PID initPID).
func InNode(comp Component, initPID int) Component {
	out := comp
	out.Path = "nsenter"
	out.Args = append([]string{"--target=" + strconv.Itoa(initPID), "--mount", "--pid", "--", comp.Path}, comp.Args...)
	out.SignalGroup = true
	out.InNode = false
	return out
}

// NodeNamespaces is what the node's namespaces look like from the host: the
// init's host PID and whether its PID and mount namespaces differ from the
// host's (the caller's).
type NodeNamespaces struct {
	InitPID              int
	OwnPID, OwnMount     bool
	PIDNS, MountNS, Host string
}

// ObserveNodeNamespaces reads /proc/<initPID>/ns of the init.
func ObserveNodeNamespaces(initPID int) (NodeNamespaces, error) {
	n := NodeNamespaces{InitPID: initPID}
	read := func(pid, ns string) (string, error) { return os.Readlink(filepath.Join("/proc", pid, "ns", ns)) }
	var err error
	var selfPID, selfMnt string
	if selfPID, err = read("self", "pid"); err != nil {
		return n, err
	}
	if selfMnt, err = read("self", "mnt"); err != nil {
		return n, err
	}
	if n.PIDNS, err = read(strconv.Itoa(initPID), "pid"); err != nil {
		return n, err
	}
	if n.MountNS, err = read(strconv.Itoa(initPID), "mnt"); err != nil {
		return n, err
	}
	n.Host = selfPID + " " + selfMnt
	n.OwnPID, n.OwnMount = n.PIDNS != selfPID, n.MountNS != selfMnt
	return n, nil
}

// waitNodeInit waits until the init has set up its mounts (it writes the
// ready file last) and checks that its namespaces are its own.
func waitNodeInit(ctx context.Context, p *Process, c Config) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if done, err := p.Exited(); done {
			return fmt.Errorf("localk8s: the node init exited: %v\n--- last lines of %s:\n%s", err, p.LogPath, tail(p.LogPath, 30))
		}
		if _, err := os.Stat(nodeReadyFile(c)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localk8s: the node init did not get ready in 30s\n--- last lines of %s:\n%s", p.LogPath, tail(p.LogPath, 30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	n, err := ObserveNodeNamespaces(p.Cmd.Process.Pid)
	if err != nil {
		return err
	}
	if !n.OwnPID || !n.OwnMount {
		return fmt.Errorf("localk8s: the node init shares the host's namespaces (pid %s, mnt %s; host %s)", n.PIDNS, n.MountNS, n.Host)
	}
	return nil
}

// runNodeInit is the init's main: it makes the node's mount namespace its
// own, mounts the node's /proc and tmpfs directories, reports ready, and
// then reaps orphans (containerd's shims end up its children) until
// SIGTERM.
func runNodeInit(args []string) int {
	fs := flag.NewFlagSet(NodeInitName, flag.ContinueOnError)
	ready := fs.String("ready", "", "file to create once the mounts are set up")
	var tmpfs []string
	fs.Func("tmpfs", "directory to mount a tmpfs of the node's own on (repeatable)", func(s string) error {
		tmpfs = append(tmpfs, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := setupNodeMounts(tmpfs); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", NodeInitName, err)
		return 1
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte("ready\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", NodeInitName, err)
			return 1
		}
	}
	fmt.Printf("%s: pid %d, /proc and %v mounted, / rshared in the node's mount namespace\n", NodeInitName, os.Getpid(), tmpfs)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	s := <-sigs
	fmt.Printf("%s: %v: exiting; the kernel ends the node's processes\n", NodeInitName, s)
	return 0
}

func setupNodeMounts(tmpfs []string) error {
	// Cut the namespace's copy of the mount table off the host's peer
	// groups first: nothing mounted below may propagate to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / rprivate in the node's mount namespace: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting the node's /proc: %w", err)
	}
	for _, d := range tmpfs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount("tmpfs", d, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", d, err)
		}
	}
	// containerd's check for HostToContainer propagation wants the hostPath's
	// mount shared (or a slave).
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making / rshared in the node's mount namespace: %w", err)
	}
	return nil
}
