package localk8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is one local cluster: its configuration, its supervised
// processes, and the REST config pinned at Start.
type Cluster struct {
	cfg  Config
	sup  *Supervisor
	rest *rest.Config

	// Logf receives progress lines (nil: none).
	Logf func(format string, args ...any)
	// Timings records how long each Start phase took, for reports.
	Timings []Timing

	mu          sync.Mutex
	started     bool
	nodeInitPID int
}

// NodeInitPID is the host PID of the node's init (0 before Start): PID 1
// of the node's PID namespace, whose mount namespace is the node's.
func (k *Cluster) NodeInitPID() int { return k.nodeInitPID }

// Timing is one Start phase's duration.
type Timing struct {
	Phase    string
	Duration time.Duration
}

// New validates cfg (see Config.Defaults) and returns a cluster that is not
// started yet.
func New(cfg Config) (*Cluster, error) {
	c, err := cfg.Defaults()
	if err != nil {
		return nil, err
	}
	return &Cluster{cfg: c, sup: NewSupervisor(c.Layout().Logs())}, nil
}

// Config returns the cluster's configuration (defaults filled in).
func (k *Cluster) Config() Config { return k.cfg }

// KubeconfigPath is the admin kubeconfig Start writes.
func (k *Cluster) KubeconfigPath() string { return k.cfg.Layout().AdminKubeconfig() }

// RESTConfig is the admin REST config pinned at Start (a copy), nil before.
func (k *Cluster) RESTConfig() *rest.Config {
	if k.rest == nil {
		return nil
	}
	return rest.CopyConfig(k.rest)
}

func (k *Cluster) logf(format string, args ...any) {
	if k.Logf != nil {
		k.Logf(format, args...)
	}
}

// CheckHost returns an error naming everything this host lacks for a local
// cluster: Linux, root, the OS packages' programs and the built binaries.
func CheckHost(c Config) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("localk8s: -provider=local runs Kubernetes as host processes and needs Linux; this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("localk8s: -provider=local needs root (it mounts, creates network namespaces and writes iptables rules); running as uid %d", os.Geteuid())
	}
	var missing []string
	for _, p := range []string{c.Containerd, c.Runc, c.Ctr, filepath.Join(c.CNIBinDir, "bridge"), filepath.Join(c.CNIBinDir, "host-local"), filepath.Join(c.CNIBinDir, "portmap"), filepath.Join(c.CNIBinDir, "loopback")} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, prog := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ipset", "nft", "ip", "conntrack", "nsenter"} {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("localk8s: missing %s; install the Debian packages listed in hack/local-packages.txt (apt-get install $(cat hack/local-packages.txt))", strings.Join(missing, ", "))
	}
	if _, err := os.Stat(c.K8sBinary); err != nil {
		return fmt.Errorf("localk8s: the multi-call Kubernetes binary %s is missing; build it with `make k8s-bin`", c.K8sBinary)
	}
	return nil
}

// portsInUse lists the fixed ports something already listens on (another
// cluster on this host).
func portsInUse(c Config) []string {
	var busy []string
	for _, hp := range []string{
		net.JoinHostPort("127.0.0.1", strconv.Itoa(EtcdPort)),
		net.JoinHostPort("127.0.0.1", strconv.Itoa(EtcdPeerPort)),
		net.JoinHostPort("0.0.0.0", strconv.Itoa(APIServerPort)),
		net.JoinHostPort("0.0.0.0", strconv.Itoa(KubeletPort)),
	} {
		l, err := net.Listen("tcp", hp)
		if err != nil {
			busy = append(busy, hp)
			continue
		}
		l.Close()
	}
	return busy
}

// EnsureKubeRouter builds kube-router from cmd/kube-router when the binary
// is missing (about 4 minutes cold on 2 cores).
func EnsureKubeRouter(ctx context.Context, c Config) error {
	if c.DisableNetworkPolicy {
		return nil
	}
	if _, err := os.Stat(c.KubeRouterBinary); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", c.KubeRouterBinary,
		"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router")
	cmd.Dir = filepath.Join(c.RepoRoot, "cmd", "kube-router")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("localk8s: building kube-router into %s (in %s): %w\n%s", c.KubeRouterBinary, cmd.Dir, err, out)
	}
	return nil
}

// Start brings the cluster up and returns when the node is Ready and the
// cluster DNS answers. On error the caller should still call Delete.
func (k *Cluster) Start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started {
		return errors.New("localk8s: Start called twice")
	}
	if err := CheckHost(k.cfg); err != nil {
		return err
	}
	st := &starting{Cluster: k, c: k.cfg, l: k.cfg.Layout(), comps: Components(k.cfg)}
	phase := time.Now()
	for _, step := range st.steps() {
		if err := step.run(ctx); err != nil {
			return err
		}
		if step.done == "" {
			continue
		}
		d := time.Since(phase)
		k.Timings = append(k.Timings, Timing{step.done, d})
		k.logf("local: %s (%s)", step.done, d.Round(100*time.Millisecond))
		phase = time.Now()
	}
	return nil
}

// startStep is one part of Start, in order; done names what holds once it
// ran, for Timings and the progress line ("" for a part not timed).
type startStep struct {
	done string
	run  func(ctx context.Context) error
}

// starting is what Start's steps hand on to the ones after them.
type starting struct {
	*Cluster
	c     Config
	l     Layout
	comps []Component
	// images delivers the node's system images, built while the control
	// plane starts.
	images chan builtImages
	files  map[string][]byte
	cs     *kubernetes.Clientset
	// initPID is the node init's host PID once it runs (0 before).
	initPID int
}

type builtImages struct {
	tars []string
	err  error
}

// steps are Start's parts, in the order they run.
func (st *starting) steps() []startStep {
	return []startStep{
		{"wiped leftovers", st.wipeLeftovers},
		{"PKI, configs and bridge", st.prepareHost},
		{"etcd up", st.startEtcd},
		{"kube-apiserver ready", st.startAPIServer},
		{"controller-manager, scheduler, containerd started", st.startControllersAndNode},
		{"pause and CoreDNS images built and imported", st.importImages},
		{"node Ready", st.startKubeletAndProxy},
		{"cluster DNS answers", st.startNetworkPolicyAndDNS},
		{"", st.waitDefaultServiceAccount},
	}
}

// wipeLeftovers removes an earlier run's leftovers (a killed test binary);
// with KeepState the state directory stays.
func (st *starting) wipeLeftovers(ctx context.Context) error {
	if err := Wipe(ctx, st.c); err != nil {
		return fmt.Errorf("localk8s: cleaning up an earlier run: %w", err)
	}
	if busy := portsInUse(st.c); len(busy) > 0 {
		return fmt.Errorf("localk8s: ports %s are in use: another Kubernetes (or another local cluster) runs on this host; stop it first", strings.Join(busy, ", "))
	}
	st.started = true
	return nil
}

// prepareHost starts building what the node needs (while the control
// plane starts), then records the host state the wipe restores and writes
// the PKI, the configuration and the bridge.
func (st *starting) prepareHost(ctx context.Context) error {
	c, l := st.c, st.l
	st.images = make(chan builtImages, 1)
	go func() {
		if err := EnsureKubeRouter(ctx, c); err != nil {
			st.images <- builtImages{err: err}
			return
		}
		tars, err := BuildSystemImages(ctx, c, l.Images())
		st.images <- builtImages{tars, err}
	}()

	for _, d := range []string{l.PKI(), l.Conf(), l.Logs(), l.Etcd(), l.ContainerdRoot(), l.ContainerdState(), l.KubeletRoot(), l.PodLogs(), l.CNIConfDir(), l.CNIDataDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := saveSysctls(c); err != nil {
		return err
	}
	if err := saveHostPaths(c); err != nil {
		return err
	}
	if err := saveRootPropagation(c); err != nil {
		return err
	}
	if err := linkCNIPlugins(c); err != nil {
		return err
	}
	for key, v := range ChangedSysctls {
		if err := setSysctl(key, v); err != nil {
			return fmt.Errorf("localk8s: sysctl %s=%s: %w", key, v, err)
		}
	}
	if _, err := os.Stat(l.AdminKubeconfig()); err != nil {
		pki, err := GeneratePKI(PKIParams{
			ClusterName: "local-" + c.Name, NodeName: c.NodeName, ServerURL: c.APIServerURL(),
			NodeIP: net.IP(c.NodeIP().AsSlice()), APIServiceIP: net.IP(c.APIServiceIP().AsSlice()),
		})
		if err != nil {
			return err
		}
		if err := pki.Write(l.PKI()); err != nil {
			return err
		}
	}
	files, err := ConfigFiles(c)
	if err != nil {
		return err
	}
	st.files = files
	for name, b := range files {
		dir := l.Conf()
		if strings.HasSuffix(name, ".conflist") {
			dir = l.CNIConfDir()
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(l.ConfFile("resolv.conf"), ResolvConf(c), 0o644); err != nil {
		return err
	}
	return setupBridge(ctx, c)
}

// start starts component name, a node component inside the node's
// namespaces.
func (st *starting) start(name string) error {
	for _, comp := range st.comps {
		if comp.Name == name {
			if comp.InNode {
				if st.initPID == 0 {
					return fmt.Errorf("localk8s: %s is a node component, started before the node init", name)
				}
				comp = InNode(comp, st.initPID)
			}
			_, err := st.sup.Start(comp)
			return err
		}
	}
	return fmt.Errorf("localk8s: no component %q", name)
}

// startEtcd pins the admin REST config and starts etcd.
func (st *starting) startEtcd(ctx context.Context) error {
	rc, err := clientcmd.BuildConfigFromFlags("", st.l.AdminKubeconfig())
	if err != nil {
		return fmt.Errorf("localk8s: admin kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	st.rest = rc
	if st.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	if err := st.start(Etcd); err != nil {
		return err
	}
	return st.waitFor(ctx, Etcd, 60*time.Second, func(ctx context.Context) error {
		return httpOK(ctx, &http.Client{}, fmt.Sprintf("http://127.0.0.1:%d/health", EtcdPort))
	})
}

func (st *starting) startAPIServer(ctx context.Context) error {
	if err := st.start(KubeAPIServer); err != nil {
		return err
	}
	return st.waitFor(ctx, KubeAPIServer, 120*time.Second, func(ctx context.Context) error {
		return st.cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// startControllersAndNode publishes kube-proxy's configuration, starts the
// controller-manager and the scheduler, the node's init and containerd.
func (st *starting) startControllersAndNode(ctx context.Context) error {
	c := st.c
	// kube-system is created by the API server itself shortly after it
	// is ready; the wait covers that moment.
	if err := st.waitFor(ctx, KubeAPIServer, 60*time.Second, func(ctx context.Context) error {
		return PublishKubeProxyConfig(ctx, st.cs, st.files["kube-proxy.yaml"])
	}); err != nil {
		return err
	}
	for _, n := range []string{KubeControllerManager, KubeScheduler} {
		if err := st.start(n); err != nil {
			return err
		}
	}
	initComp, err := NodeInitComponent(c)
	if err != nil {
		return err
	}
	initProc, err := st.sup.Start(initComp)
	if err != nil {
		return err
	}
	if err := waitNodeInit(ctx, initProc, c); err != nil {
		return err
	}
	st.initPID = initProc.Cmd.Process.Pid
	st.nodeInitPID = st.initPID
	if err := st.start(Containerd); err != nil {
		return err
	}
	return st.waitFor(ctx, Containerd, 60*time.Second, func(ctx context.Context) error {
		_, err := run(ctx, c.Ctr, "--address", st.l.ContainerdSocket(), "version")
		return err
	})
}

// importImages waits for the system images prepareHost started building
// and imports them into the node's containerd.
func (st *starting) importImages(ctx context.Context) error {
	var b builtImages
	select {
	case b = <-st.images:
	case <-ctx.Done():
		return ctx.Err()
	}
	if b.err != nil {
		return b.err
	}
	for _, t := range b.tars {
		if err := ImportImage(ctx, st.c, t); err != nil {
			return err
		}
	}
	return nil
}

func (st *starting) startKubeletAndProxy(ctx context.Context) error {
	for _, n := range []string{Kubelet, KubeProxy} {
		if err := st.start(n); err != nil {
			return err
		}
	}
	return st.waitFor(ctx, Kubelet, st.c.ReadyTimeout, func(ctx context.Context) error {
		return nodeReady(ctx, st.cs, st.c.NodeName)
	})
}

// startNetworkPolicyAndDNS starts kube-router and deploys the cluster DNS.
func (st *starting) startNetworkPolicyAndDNS(ctx context.Context) error {
	c := st.c
	// kube-router identifies its node by the Node object, which exists only
	// once the kubelet registered it.
	if !c.DisableNetworkPolicy {
		if err := st.start(KubeRouter); err != nil {
			return err
		}
	}
	if err := deployDNS(ctx, st.cs, c); err != nil {
		return err
	}
	want := c.APIServiceIP()
	return st.waitFor(ctx, "cluster DNS", c.ReadyTimeout, func(ctx context.Context) error {
		addrs, err := LookupViaClusterDNS(ctx, c, "kubernetes.default.svc.cluster.local.")
		if err != nil {
			return err
		}
		if !slices.Contains(addrs, want) {
			return fmt.Errorf("kubernetes.default.svc.cluster.local resolved to %v, want %s", addrs, want)
		}
		return nil
	})
}

// waitDefaultServiceAccount: the default ServiceAccount must exist before
// pods can be created in "default"; the suite's own namespaces get theirs
// within a second.
func (st *starting) waitDefaultServiceAccount(ctx context.Context) error {
	return st.waitFor(ctx, KubeControllerManager, 60*time.Second, func(ctx context.Context) error {
		_, err := st.cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// waitFor polls check until it succeeds, failing early with the component's
// log tail if a supervised process exits meanwhile.
func (k *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		for _, p := range k.sup.Running() {
			if done, werr := p.Exited(); done {
				return fmt.Errorf("localk8s: %s exited while waiting for %s: %v\n--- last lines of %s:\n%s", p.Name, what, werr, p.LogPath, tail(p.LogPath, 30))
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("localk8s: %s not ready after %s: %v", what, timeout, last)
			if p := k.sup.Find(what); p != nil {
				msg += fmt.Sprintf("\n--- last lines of %s:\n%s", p.LogPath, tail(p.LogPath, 30))
			}
			return errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func httpOK(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s not Ready: %s: %s", name, cond.Reason, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// setupBridge creates the CNI bridge with the node IP before the API server
// binds it, and routes both cluster ranges to it so that no packet for them
// ever takes the default route off the host.
func setupBridge(ctx context.Context, c Config) error {
	steps := [][]string{
		{"link", "add", c.Bridge, "type", "bridge"},
		{"addr", "add", BridgeAddr(c).String(), "dev", c.Bridge},
		{"link", "set", c.Bridge, "up"},
		{"route", "add", c.PodCIDR.String(), "dev", c.Bridge, "src", c.NodeIP().String()},
		{"route", "add", c.ServiceCIDR.String(), "dev", c.Bridge, "src", c.NodeIP().String()},
	}
	for _, s := range steps {
		if _, err := run(ctx, "ip", s...); err != nil {
			return fmt.Errorf("localk8s: setting up bridge %s: %w", c.Bridge, err)
		}
	}
	return nil
}

// LoadImage imports an image tarball into the node's containerd.
func (k *Cluster) LoadImage(ctx context.Context, tarball string) error {
	if k.rest == nil {
		return errors.New("localk8s: LoadImage before Start")
	}
	return ImportImage(ctx, k.cfg, tarball)
}

// ExportLogs copies the components' logs, the pods' logs and the configs
// into dir, and lists the nodes and pods.
func (k *Cluster) ExportLogs(ctx context.Context, dir string) error {
	l := k.cfg.Layout()
	var errs []error
	for _, sub := range []struct{ from, to string }{{l.Logs(), "components"}, {l.PodLogs(), "pods"}, {l.Conf(), "conf"}} {
		if err := copyTree(sub.from, filepath.Join(dir, sub.to)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The node's packet filtering as the host has it (the node shares the
	// host's network namespace): kube-proxy's and kube-router's iptables
	// rules, kube-router's and istio-cni's ipsets, istio-cni's nftables
	// tables in native nftables mode (its probe set and SNAT rule).
	var nf strings.Builder
	for _, c := range [][]string{{"iptables-save"}, {"ipset", "save"}, {"nft", "list", "ruleset"}} {
		out, err := run(ctx, c[0], c[1:]...)
		fmt.Fprintf(&nf, "### %s\n%s\n", strings.Join(c, " "), out)
		if err != nil {
			fmt.Fprintf(&nf, "(%v)\n", err)
		}
	}
	errs = append(errs, os.WriteFile(filepath.Join(dir, "host-netfilter.txt"), []byte(nf.String()), 0o644))
	if k.rest != nil {
		cs, err := kubernetes.NewForConfig(k.RESTConfig())
		if err == nil {
			var b strings.Builder
			if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
				for _, n := range nodes.Items {
					fmt.Fprintf(&b, "node %s %v\n", n.Name, n.Status.Conditions)
				}
			}
			if pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
				for _, p := range pods.Items {
					fmt.Fprintf(&b, "pod %s/%s %s ip=%s node=%s\n", p.Namespace, p.Name, p.Status.Phase, p.Status.PodIP, p.Spec.NodeName)
				}
			}
			errs = append(errs, os.WriteFile(filepath.Join(dir, "cluster.txt"), []byte(b.String()), 0o644))
		}
	}
	return errors.Join(errs...)
}

func copyTree(from, to string) error {
	if _, err := os.Stat(from); err != nil {
		return err
	}
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			// Pod logs are symlinks in some layouts; follow them.
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // rotated away meanwhile
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// Stop stops every component (reverse start order) without cleaning the
// host; Delete does both.
func (k *Cluster) Stop(ctx context.Context) error {
	return k.sup.StopAll()
}

// Delete stops the cluster and wipes it from the host: processes, mounts,
// network namespaces, iptables rules and ipsets, the bridge, cgroups, the
// sysctls it changed and (unless KeepState) the state directory.
func (k *Cluster) Delete(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.started {
		return nil
	}
	// A cancelled run context must not stop the clean-up.
	ctx = context.WithoutCancel(ctx)
	stopErr := k.sup.StopAll()
	wipeErr := Wipe(ctx, k.cfg)
	k.started = false
	k.rest = nil
	k.nodeInitPID = 0
	if wipeErr != nil {
		return wipeErr
	}
	if stopErr != nil {
		k.logf("local: %v", stopErr)
	}
	return nil
}

// linkCNIPlugins fills the node's CNI plugin directory (in the state
// directory) with links to the OS packages' plugins: istio-cni's installer
// writes its plugin there, and the host's plugin directory stays as the
// package left it.
func linkCNIPlugins(c Config) error {
	dir := c.Layout().CNIBinDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(c.CNIBinDir)
	if err != nil {
		return fmt.Errorf("localk8s: CNI plugins: %w", err)
	}
	for _, e := range entries {
		link := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(c.CNIBinDir, e.Name()), link); err != nil {
			return err
		}
	}
	return nil
}
