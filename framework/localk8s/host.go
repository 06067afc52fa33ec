package localk8s

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HostState is what the wipe looks at: the parts of the host a local
// cluster may leave something in. Observe fills it from the live host;
// tests build it by hand.
type HostState struct {
	// Processes running on the host (pid, argv, cgroup paths).
	Processes []HostProcess
	// Mounts are mount points with their filesystem type.
	Mounts []Mount
	// IPTables holds `<binary>-save` output by binary name
	// ("iptables", "ip6tables", and their -legacy twins where installed);
	// a binary that fails is absent.
	IPTables map[string]string
	// IPSets are the names `ipset list -n` prints.
	IPSets []string
	// NftTables are the tables `nft list tables` prints.
	NftTables []NftTable
	// Links are network interfaces with the bridge they are enslaved to.
	Links []Link
	// CgroupDirs are directories under the cgroup mounts named like the
	// kubelet's pod hierarchy (kubepods, kubepods.slice), recursively.
	CgroupDirs []string
	// Sysctls holds the current values of the sysctls Start changes.
	Sysctls map[string]string
	// SavedSysctls holds the values recorded before the first Start
	// (from the state directory), if any.
	SavedSysctls map[string]string
	// StateDirExists says whether the state directory is there.
	StateDirExists bool
	// HostPathsNow are the HostPaths that exist; HostPathsBefore those that
	// existed before the first Start (nil: not recorded).
	HostPathsNow, HostPathsBefore []string
	// LogLinks are /var/log/containers entries pointing into the state
	// directory (the kubelet writes them there whatever its config says).
	LogLinks []string
	// RootPropagation is the propagation kind of the host's / now;
	// SavedRootPropagation what it was before the first Start ("": not
	// recorded). The node's namespace must leave it as it was.
	RootPropagation, SavedRootPropagation string
	// DeadShimSockets are socket files in /run/containerd/s that nobody
	// listens on: shims killed before they could remove them.
	DeadShimSockets []string
}

// HostPaths are directories outside the state directory that the kubelet
// (device-plugins socket, /var/log/containers links), libcni (result cache)
// and containerd's shims (their sockets) create at fixed places. The wipe
// removes those that did not exist before the first Start.
//
// NodeRunDirs are among them: the node init creates them as mount points
// for its own tmpfs, and on the host they stay empty directories.
var HostPaths = append([]string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers"}, NodeRunDirs...)

const (
	containerLogDir = "/var/log/containers"
	shimSocketDir   = "/run/containerd/s"
	hostPathsFile   = "host-paths-before"
)

func existingHostPaths() []string {
	var out []string
	for _, p := range HostPaths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// saveHostPaths records which HostPaths exist before the first Start.
func saveHostPaths(c Config) error {
	path := filepath.Join(c.StateDir, hostPathsFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	return os.WriteFile(path, []byte(strings.Join(existingHostPaths(), "\n")+"\n"), 0o644)
}

func readHostPathsBefore(c Config) []string {
	b, err := os.ReadFile(filepath.Join(c.StateDir, hostPathsFile))
	if err != nil {
		return nil
	}
	out := []string{}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func listLogLinks(c Config) []string {
	entries, err := os.ReadDir(containerLogDir)
	if err != nil {
		return nil
	}
	state := filepath.Clean(c.StateDir) + "/"
	var out []string
	for _, e := range entries {
		p := filepath.Join(containerLogDir, e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, state) {
			out = append(out, p)
		}
	}
	return out
}

func listDeadShimSockets() []string {
	entries, err := os.ReadDir(shimSocketDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(shimSocketDir, e.Name())
		if e.Type()&fs.ModeSocket == 0 {
			continue
		}
		conn, err := net.DialTimeout("unix", p, time.Second)
		if err == nil {
			conn.Close() // a live shim (ours or a host containerd's): keep
			continue
		}
		out = append(out, p)
	}
	return out
}

// HostProcess is one process.
type HostProcess struct {
	PID     int
	Argv    []string
	Cgroups []string
}

// Mount is one mount point.
type Mount struct {
	Target, FSType string
	// Propagation is the mount's propagation kind (see PropagationKind):
	// "shared", "slave", "shared,slave", "unbindable" or "private".
	Propagation string
}

// NftTable is one nftables table.
type NftTable struct {
	Family, Name string
}

func (t NftTable) String() string { return t.Family + " " + t.Name }

// ParseNftTables reads `nft list tables` output: "table <family> <name>"
// lines.
func ParseNftTables(out string) []NftTable {
	var ts []NftTable
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "table" {
			ts = append(ts, NftTable{Family: f[1], Name: f[2]})
		}
	}
	return ts
}

// Link is one network interface.
type Link struct {
	Name, Master string
}

// ChangedSysctls are the sysctls Start sets (and the wipe restores): the
// node routes Service traffic between pods, and the bridge must pass frames
// through iptables for kube-proxy and kube-router to see them.
var ChangedSysctls = map[string]string{
	"net/ipv4/ip_forward":                 "1",
	"net/bridge/bridge-nf-call-iptables":  "1",
	"net/bridge/bridge-nf-call-ip6tables": "1",
}

// KeepRecords fills in the records of the host before the first Start
// (saved sysctls, host paths, propagation of /) from an earlier observation
// where s has none, e.g. after the state directory that held them is gone.
func (s *HostState) KeepRecords(earlier HostState) {
	if s.SavedSysctls == nil {
		s.SavedSysctls = earlier.SavedSysctls
	}
	if s.HostPathsBefore == nil {
		s.HostPathsBefore = earlier.HostPathsBefore
	}
	if s.SavedRootPropagation == "" {
		s.SavedRootPropagation = earlier.SavedRootPropagation
	}
}

// Observe reads the host's current state as far as the wipe of c cares.
func Observe(ctx context.Context, c Config) (HostState, error) {
	var s HostState
	var errs []error
	var err error
	if s.Processes, err = listProcesses(); err != nil {
		errs = append(errs, err)
	}
	if s.Mounts, err = listMounts(); err != nil {
		errs = append(errs, err)
	}
	s.IPTables = map[string]string{}
	// The legacy backend too, where installed: istio-cni picks the backend
	// it finds rules in, which may not be the host's default.
	for _, bin := range []string{"iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy"} {
		if _, err := exec.LookPath(bin + "-save"); err != nil {
			continue
		}
		out, err := run(ctx, bin+"-save")
		if err == nil {
			s.IPTables[bin] = out
		}
	}
	if out, err := run(ctx, "ipset", "list", "-n"); err == nil {
		s.IPSets = strings.Fields(out)
	}
	// istio-cni's node agent writes its nftables tables with the nft of
	// its own image, so a host without nft may still have them: not
	// being able to look is an error, not a clean host.
	if _, err := exec.LookPath("nft"); err != nil {
		errs = append(errs, fmt.Errorf("localk8s: no nft on the host to list istio-cni's nftables tables with: install Debian's nftables (make local-deps)"))
	} else if out, err := run(ctx, "nft", "list", "tables"); err == nil {
		s.NftTables = ParseNftTables(out)
	} else {
		errs = append(errs, fmt.Errorf("localk8s: reading the host's nftables tables (istio-cni's in native nftables mode): %w", err))
	}
	if s.Links, err = listLinks(); err != nil {
		errs = append(errs, err)
	}
	s.CgroupDirs = listKubeCgroups(s.Mounts)
	s.Sysctls = map[string]string{}
	for k := range ChangedSysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			s.Sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	s.SavedSysctls, _ = readSavedSysctls(c)
	_, err = os.Stat(c.StateDir)
	s.StateDirExists = err == nil
	s.HostPathsNow = existingHostPaths()
	s.HostPathsBefore = readHostPathsBefore(c)
	s.LogLinks = listLogLinks(c)
	for _, m := range s.Mounts {
		if m.Target == "/" {
			s.RootPropagation = m.Propagation // the last (top) mount on / counts
		}
	}
	s.SavedRootPropagation = readSavedRootPropagation(c)
	s.DeadShimSockets = listDeadShimSockets()
	return s, errors.Join(errs...)
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

func runStdin(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s\ninput:\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)), stdin)
	}
	return nil
}

func listProcesses() ([]HostProcess, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []HostProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // exited, or a kernel thread
		}
		p := HostProcess{PID: pid, Argv: strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")}
		if cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup")); err == nil {
			for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
				if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
					p.Cgroups = append(p.Cgroups, parts[2])
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func listMounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMountinfo(f)
}

// ParseMountinfo reads /proc/<pid>/mountinfo lines.
func ParseMountinfo(r interface{ Read([]byte) (int, error) }) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// id parent maj:min root mountpoint options [optional...] - fstype source superopts
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			return nil, fmt.Errorf("localk8s: malformed mountinfo line %q", sc.Text())
		}
		out = append(out, Mount{Target: unescapeMount(fields[4]), FSType: fields[sep+1], Propagation: PropagationKind(fields[6:sep])})
	}
	return out, sc.Err()
}

// PropagationKind names a mount's propagation from mountinfo's optional
// fields ("shared:1", "master:3", "propagate_from:2", "unbindable"); peer
// group numbers are left out, since a restored mount gets a new one.
func PropagationKind(optional []string) string {
	var shared, slave, unbindable bool
	for _, f := range optional {
		switch tag, _, _ := strings.Cut(f, ":"); tag {
		case "shared":
			shared = true
		case "master":
			slave = true
		case "unbindable":
			unbindable = true
		}
	}
	switch {
	case unbindable:
		return "unbindable"
	case shared && slave:
		return "shared,slave"
	case shared:
		return "shared"
	case slave:
		return "slave"
	}
	return "private"
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func listLinks() ([]Link, error) {
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, err
	}
	var out []Link
	for _, e := range entries {
		l := Link{Name: e.Name()}
		if m, err := os.Readlink(filepath.Join("/sys/class/net", e.Name(), "master")); err == nil {
			l.Master = filepath.Base(m)
		}
		out = append(out, l)
	}
	return out, nil
}

// kubeCgroupRoots are the top-level cgroup names the kubelet creates with
// the cgroupfs driver (kubepods) and the systemd driver (kubepods.slice).
var kubeCgroupRoots = []string{"kubepods", "kubepods.slice"}

func listKubeCgroups(mounts []Mount) []string {
	var out []string
	for _, m := range mounts {
		if m.FSType != "cgroup" && m.FSType != "cgroup2" {
			continue
		}
		for _, root := range kubeCgroupRoots {
			dir := filepath.Join(m.Target, root)
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					out = append(out, p)
				}
				return nil
			})
		}
	}
	sort.Strings(out)
	return out
}

const savedSysctlsFile = "host-sysctls"

// saveSysctls records the host's values of ChangedSysctls once per state
// directory: a rerun after a crash must not record the cluster's own values
// as the host's.
func saveSysctls(c Config) error {
	path := filepath.Join(c.StateDir, savedSysctlsFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	var b strings.Builder
	keys := make([]string, 0, len(ChangedSysctls))
	for k := range ChangedSysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			continue // e.g. bridge sysctls without br_netfilter
		}
		fmt.Fprintf(&b, "%s=%s\n", k, strings.TrimSpace(string(v)))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func readSavedSysctls(c Config) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(c.StateDir, savedSysctlsFile))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, nil
}

func setSysctl(key, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
}

const savedRootPropagationFile = "host-root-propagation"

// saveRootPropagation records the propagation of the host's / once per state
// directory (a rerun after a crash must not record a changed one).
func saveRootPropagation(c Config) error {
	path := filepath.Join(c.StateDir, savedRootPropagationFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	mounts, err := listMounts()
	if err != nil {
		return err
	}
	kind := ""
	for _, m := range mounts {
		if m.Target == "/" {
			kind = m.Propagation
		}
	}
	if kind == "" {
		return errors.New("localk8s: / is not in this process's mountinfo")
	}
	return os.WriteFile(path, []byte(kind+"\n"), 0o644)
}

// SaveHostMounts records what the wipe restores of the host's mounts (the
// propagation of /) in c's state directory, as Start does.
func SaveHostMounts(c Config) error {
	if err := os.MkdirAll(c.StateDir, 0o755); err != nil {
		return err
	}
	return saveRootPropagation(c)
}

func readSavedRootPropagation(c Config) string {
	b, err := os.ReadFile(filepath.Join(c.StateDir, savedRootPropagationFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// propagationFlags are mount(2)'s flags that set each propagation kind on
// one mount (not recursively: the host's submounts keep theirs).
var propagationFlags = map[string]uintptr{
	"private":    syscall.MS_PRIVATE,
	"shared":     syscall.MS_SHARED,
	"slave":      syscall.MS_SLAVE,
	"unbindable": syscall.MS_UNBINDABLE,
}

func setRootPropagation(kind string) error {
	flags, ok := propagationFlags[kind]
	if !ok {
		return fmt.Errorf("localk8s: cannot restore propagation %q of / (a slave's master is gone); set it by hand", kind)
	}
	return syscall.Mount("", "/", "", flags, "")
}
