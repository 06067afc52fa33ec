package localk8s_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/localk8s"
)

// hostMounts is what the node's namespace must leave as it found on the
// host: the propagation of / and the mounts at the places the node uses.
func hostMounts(t *testing.T, c localk8s.Config) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := localk8s.ParseMountinfo(f)
	if err != nil {
		t.Fatal(err)
	}
	// The node's directories as mountinfo names them (/var/run is often a
	// link to /run).
	var runDirs []string
	for _, d := range localk8s.NodeRunDirs {
		if parent, err := filepath.EvalSymlinks(filepath.Dir(d)); err == nil {
			d = filepath.Join(parent, filepath.Base(d))
		}
		runDirs = append(runDirs, d)
	}
	var out []string
	for _, m := range ms {
		keep := m.Target == "/" || m.Target == "/proc" || strings.HasPrefix(m.Target, "/proc/") ||
			strings.HasPrefix(m.Target+"/", c.StateDir+"/") ||
			slices.ContainsFunc(runDirs, func(d string) bool { return m.Target == d || strings.HasPrefix(m.Target, d+"/") })
		if keep {
			out = append(out, m.Target+" "+m.FSType+" "+m.Propagation)
		}
	}
	return out
}

// TestLocalNodeNamespace brings the local cluster up and shows what its
// node's own namespaces give istio-cni and ztunnel, and what they leave on
// the host:
//   - in the node's namespace PID 1 is the node's init and /proc/1/ns/net is
//     readable (on this kind of host, not for the host's own init), and
//     containerd and the kubelet share that PID namespace;
//   - a pod with a /var/run/netns hostPath mounted HostToContainer (as
//     istio-cni's node agent has it) starts, and the pods' network
//     namespaces are in the node's /var/run/netns, not the host's;
//   - after teardown the host's mounts (the propagation of /, /proc, the
//     node's directories) are as found, and the wipe's host check finds
//     nothing; negative control: a mount left behind and a changed
//     propagation of / make the check fire, and the wipe undoes both.
func TestLocalNodeNamespace(t *testing.T) {
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		t.Skip("set MESHCLAIMS_LOCAL=1 (and run as root) to start a real local cluster on this host")
	}
	if os.Geteuid() != 0 {
		t.Skip("the local cluster needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	k, err := localk8s.New(localk8s.Config{Name: "localk8s-node", DisableNetworkPolicy: true})
	if err != nil {
		t.Fatal(err)
	}
	k.Logf = t.Logf
	cfg := k.Config()
	wipedHost(t, cfg)
	before := hostMounts(t, cfg)
	beforeSnap := snapshot(t, cfg)
	deleted := false
	defer func() {
		if !deleted {
			if err := k.Delete(context.Background()); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	}()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initPID := k.NodeInitPID()
	inNode := func(args ...string) (string, error) {
		out, err := exec.Command("nsenter", append([]string{"--target=" + strconv.Itoa(initPID), "--mount", "--pid", "--"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := inNode("cat", "/proc/1/cmdline"); err != nil || !strings.HasPrefix(out, localk8s.NodeInitName) {
		t.Errorf("PID 1 in the node: %q, %v; want %s", out, err, localk8s.NodeInitName)
	}
	if out, err := inNode("stat", "-L", "-c", "%i", "/proc/1/ns/net"); err != nil || out == "" {
		t.Errorf("stat /proc/1/ns/net in the node: %q, %v", out, err)
	}
	if out, err := inNode("findmnt", "-no", "PROPAGATION", "/"); err != nil || !strings.HasPrefix(out, "shared") {
		t.Errorf("/ in the node: %q, %v; want shared", out, err)
	}
	// The host's view, for contrast (not asserted: another host's init may
	// allow it): what the agent would have met outside the node.
	_, hostErr := os.Stat("/proc/1/ns/net")
	t.Logf("on the host, stat /proc/1/ns/net: %v", hostErr)
	nodePIDNS, err := os.Readlink("/proc/" + strconv.Itoa(initPID) + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	st, err := localk8s.Observe(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"containerd", "kubelet"} {
		found := false
		for _, p := range st.Processes {
			if filepath.Base(p.Argv[0]) == want && slices.ContainsFunc(p.Argv, func(a string) bool { return strings.Contains(a, cfg.StateDir) }) {
				ns, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/ns/pid")
				found = found || (err == nil && ns == nodePIDNS)
			}
		}
		if !found {
			t.Errorf("no %s of this cluster in the node's PID namespace %s", want, nodePIDNS)
		}
	}

	cs, err := kubernetes.NewForConfig(k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "localk8s-node"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, time.Minute, "default ServiceAccount", func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	hostToContainer := corev1.MountPropagationHostToContainer
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "netns-reader", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "pause", Image: localk8s.SandboxImage, ImagePullPolicy: corev1.PullNever,
				VolumeMounts: []corev1.VolumeMount{{Name: "netns", MountPath: "/host/var/run/netns", MountPropagation: &hostToContainer}},
			}},
			Volumes: []corev1.Volume{{Name: "netns", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/netns"}}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, 2*time.Minute, "the HostToContainer pod running", func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil {
				return nil
			}
			if w := s.State.Waiting; w != nil && w.Message != "" {
				return &podError{w.Reason + ": " + w.Message}
			}
		}
		evs, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		var msgs []string
		for _, e := range evs.Items {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		return &podError{"phase " + string(p.Status.Phase) + "; events: " + strings.Join(msgs, " | ")}
	})
	// The pods' network namespaces are in the node's /var/run/netns (its
	// tmpfs), and the host's `ip netns` does not see them.
	out, err := inNode("ls", "/var/run/netns")
	if err != nil || !strings.Contains(out, "cni-") {
		t.Errorf("the node's /var/run/netns holds %q (%v); want the pods' cni-* namespaces", out, err)
	}
	if hostNS, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(hostNS), "cni-") {
		t.Errorf("the host's ip netns sees the pods' namespaces: %s", hostNS)
	}

	deleted = true
	if err := k.Delete(context.Background()); err != nil {
		t.Fatalf("delete: %v", err)
	}
	after := hostMounts(t, cfg)
	if !slices.Equal(before, after) {
		t.Errorf("the host's mounts changed:\nbefore: %q\nafter:  %q", before, after)
	}
	afterSnap := snapshot(t, cfg)
	for _, key := range sortedKeys(beforeSnap, afterSnap) {
		if !slices.Equal(beforeSnap[key], afterSnap[key]) {
			t.Errorf("host %s changed:\nbefore: %q\nafter:  %q", key, beforeSnap[key], afterSnap[key])
		}
	}
	if st, err := localk8s.Observe(context.Background(), cfg); err != nil {
		t.Fatal(err)
	} else if left := localk8s.PlanWipe(st, cfg, os.Getpid()); !left.Empty() {
		t.Errorf("leftovers after Delete:\n%s", left)
	}

	t.Run("negative control", func(t *testing.T) {
		// A scratch state directory with the host's records, a tmpfs left
		// mounted in it and / made shared: both checks must fire.
		c, err := localk8s.Config{Name: "localk8s-leftover", StateDir: filepath.Join(t.TempDir(), "state")}.Defaults()
		if err != nil {
			t.Fatal(err)
		}
		if err := localk8s.SaveHostMounts(c); err != nil {
			t.Fatal(err)
		}
		ref := hostMounts(t, c)
		left := filepath.Join(c.StateDir, "left-behind")
		if err := os.MkdirAll(left, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", left, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		defer syscall.Unmount(left, syscall.MNT_DETACH)
		rootWas := rootKind(t)
		if err := syscall.Mount("", "/", "", syscall.MS_SHARED, ""); err != nil {
			t.Fatal(err)
		}
		defer restoreRoot(rootWas)
		if slices.Equal(ref, hostMounts(t, c)) {
			t.Error("the mount comparison did not see a tmpfs left behind and / made shared")
		}
		st, err := localk8s.Observe(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		plan := localk8s.PlanWipe(st, c, os.Getpid())
		if !slices.Contains(plan.Unmount, left) {
			t.Errorf("the wipe's check missed the tmpfs at %s: %s", left, plan)
		}
		if rootWas != "shared" && plan.RestoreRootPropagation != rootWas {
			t.Errorf("the wipe's check missed / made shared (was %s): %s", rootWas, plan)
		}
		// The wipe's own steps undo both (only these: the rest of a plan
		// for a scratch directory is not this test's business).
		if err := localk8s.Execute(context.Background(), localk8s.WipePlan{Unmount: plan.Unmount, RestoreRootPropagation: plan.RestoreRootPropagation}); err != nil {
			t.Fatal(err)
		}
		if got := hostMounts(t, c); !slices.Equal(ref, got) {
			t.Errorf("after the wipe's steps the host's mounts are\n%q, want\n%q", got, ref)
		}
	})
}

type podError struct{ msg string }

func (e *podError) Error() string { return e.msg }

func rootKind(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("findmnt", "-no", "PROPAGATION", "/").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func restoreRoot(kind string) {
	flags := map[string]uintptr{"private": syscall.MS_PRIVATE, "shared": syscall.MS_SHARED, "slave": syscall.MS_SLAVE, "unbindable": syscall.MS_UNBINDABLE}[kind]
	if flags != 0 {
		_ = syscall.Mount("", "/", "", flags, "")
	}
}
