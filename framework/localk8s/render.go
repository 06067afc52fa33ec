package localk8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"text/template"

	"sigs.k8s.io/yaml"
)

// CNINetworkName names the bridge network in the CNI config; the bridge
// plugin tags its iptables rules with it, which is how the wipe finds them.
const CNINetworkName = "meshclaims-local"

// SandboxImage is the pause image containerd starts every pod sandbox from.
// It is built from cmd/localk8s/pause and imported before the kubelet starts:
// no registry is ever asked for it.
const SandboxImage = "docker.io/meshclaims/pause:local"

// ConfigFiles renders every component config the cluster needs, keyed by
// file name under the state directory's conf/ (the CNI conflist goes into
// the CNI conf dir; see Start).
func ConfigFiles(c Config) (map[string][]byte, error) {
	files := map[string][]byte{}
	var err error
	if files["containerd.toml"], err = ContainerdConfig(c); err != nil {
		return nil, err
	}
	renders := map[string]any{
		"kubelet.yaml":    KubeletConfig(c),
		"kube-proxy.yaml": KubeProxyConfig(c),
		"scheduler.yaml":  SchedulerConfig(c),
	}
	for name, v := range renders {
		if files[name], err = yaml.Marshal(v); err != nil {
			return nil, fmt.Errorf("localk8s: rendering %s: %w", name, err)
		}
	}
	if files["10-meshclaims.conflist"], err = CNIConfig(c); err != nil {
		return nil, err
	}
	return files, nil
}

// q quotes a TOML basic string: strconv.Quote escapes what TOML escapes
// for the paths used here.
var containerdTemplate = template.Must(template.New("containerd").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(`# Written by meshclaims' local provider; regenerated on every Start.
version = 2
root = {{ q .Root }}
state = {{ q .State }}
[grpc]
  address = {{ q .Socket }}
[plugins."io.containerd.internal.v1.opt"]
  # Default /opt/containerd: keep it in the state directory.
  path = {{ q .Opt }}
[ttrpc]
  address = {{ q .TTRPC }}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {{ q .Sandbox }}
  # Network namespaces go to /var/run/netns, which in the node's mount
  # namespace is a tmpfs of the node's own (see nodeinit.go): the host's
  # /run/netns never sees them, and istio-cni's agent finds them under its
  # /host/var/run/netns mount at the path the CNI plugin reports.
  netns_mounts_under_state_dir = false
  enable_cdi = false
  # Hosts without CAP_SYS_RESOURCE (this kind of VM) fail every sandbox
  # with "can't get final child's PID from pipe: EOF" unless containerd
  # keeps oom_score_adj at or above its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = {{ q .Runc }}
        # runc's container state under the state directory, not in
        # /run/containerd/runc that a host containerd may share.
        Root = {{ q .RuncRoot }}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {{ q .CNIBin }}
    conf_dir = {{ q .CNIConf }}
    max_conf_num = 1
{{- range .Registries }}
  # A private registry, configured as a cluster owner configures nodes. The
  # explicit https endpoint: containerd speaks plain HTTP to localhost and
  # 127.0.0.1 registries unless told otherwise.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.{{ q .Host }}]
    endpoint = [{{ q (printf "https://%s" .Host) }}]
  [plugins."io.containerd.grpc.v1.cri".registry.configs.{{ q .Host }}.tls]
    ca_file = {{ q .CAFile }}
  [plugins."io.containerd.grpc.v1.cri".registry.configs.{{ q .Host }}.auth]
    username = {{ q .Username }}
    password = {{ q .Password }}
{{- end }}
`))

// ContainerdConfig renders containerd's TOML config (format version 2, the
// one Debian's containerd 1.6 reads).
func ContainerdConfig(c Config) ([]byte, error) {
	l := c.Layout()
	data := map[string]any{
		"Root": l.ContainerdRoot(), "State": l.ContainerdState(),
		"Socket": l.ContainerdSocket(), "TTRPC": l.ContainerdSocket() + ".ttrpc",
		"Sandbox": SandboxImage, "Opt": filepath.Join(l.Root, "containerd", "opt"), "RuncRoot": filepath.Join(l.Root, "containerd", "runc"), "Runc": c.Runc, "CNIBin": l.CNIBinDir(), "CNIConf": l.CNIConfDir(),
		"Registries": c.Registries,
	}
	var b bytes.Buffer
	err := containerdTemplate.Execute(&b, data)
	return b.Bytes(), err
}

// KubeletConfig is the KubeletConfiguration (kubelet.config.k8s.io/v1beta1).
func KubeletConfig(c Config) map[string]any {
	l := c.Layout()
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// cgroup v1 hosts: the kubelet refuses v1 unless told not to, and
		// the systemd driver needs systemd as PID 1, which these VMs lack.
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"containerRuntimeEndpoint": "unix://" + l.ContainerdSocket(),
		"address":                  c.NodeIP().String(),
		"port":                     KubeletPort,
		"healthzBindAddress":       "127.0.0.1",
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": l.PKI() + "/ca.crt"},
		},
		"authorization":     map[string]any{"mode": "Webhook"},
		"tlsCertFile":       l.PKI() + "/kubelet.crt",
		"tlsPrivateKeyFile": l.PKI() + "/kubelet.key",
		"clusterDNS":        []string{c.DNSServiceIP().String()},
		"clusterDomain":     "cluster.local",
		"podCIDR":           c.NodeSubnet().String(),
		"podLogsDir":        l.PodLogs(),
		"failSwapOn":        false,
		// The pods' resolv.conf upstream: never the host's, whose resolvers
		// are outside the networks this cluster may talk to.
		"resolvConf": l.ConfFile("resolv.conf"),
		// A test node on a shared disk must not evict the suite's pods or
		// garbage-collect imported images (they cannot be pulled back).
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
		"maxPods":                     110,
		"registerNode":                true,
		// Faster status updates make "node Ready" and pod readiness visible
		// sooner; the cost on one node is negligible.
		"nodeStatusUpdateFrequency": "4s",
		"syncFrequency":             "10s",
		"fileCheckFrequency":        "10s",
		"shutdownGracePeriod":       "0s",
	}
	if c.ContainerLogMaxSize != "" {
		cfg["containerLogMaxSize"] = c.ContainerLogMaxSize
		cfg["containerLogMonitorInterval"] = "3s"
	}
	return cfg
}

// KubeProxyConfig is the KubeProxyConfiguration (iptables mode), with the
// settings kind gives its kube-proxy (kind's kubeadm config template,
// pkg/cluster/internal/kubeadm/config.go: iptables.minSyncPeriod 1s,
// conntrack.maxPerCore 0, everything else kube-proxy's defaults, so
// syncPeriod 30s). minSyncPeriod is what HYBRID's kind figures turn on: a
// change right after another waits for it (a revert about 1 s, a new
// Service's endpoints about 1 s after the Service). The file is also
// published as kube-system/kube-proxy (PublishKubeProxyConfig), as kubeadm
// does, so what runs can be read from the cluster.
func KubeProxyConfig(c Config) map[string]any {
	return map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clientConnection":   map[string]any{"kubeconfig": c.Layout().Kubeconfig("kube-proxy")},
		"clusterCIDR":        c.PodCIDR.String(),
		"hostnameOverride":   c.NodeName,
		"bindAddress":        c.NodeIP().String(),
		"healthzBindAddress": "127.0.0.1:10256",
		"metricsBindAddress": "127.0.0.1:10249",
		// maxPerCore 0 leaves nf_conntrack_max alone: the host's setting is
		// not ours to change (and sysfs may be read-only).
		"conntrack": map[string]any{"maxPerCore": 0},
		"iptables":  map[string]any{"minSyncPeriod": "1s"},
	}
}

// SchedulerConfig is the KubeSchedulerConfiguration.
func SchedulerConfig(c Config) map[string]any {
	return map[string]any{
		"apiVersion":       "kubescheduler.config.k8s.io/v1",
		"kind":             "KubeSchedulerConfiguration",
		"clientConnection": map[string]any{"kubeconfig": c.Layout().Kubeconfig("scheduler")},
		"leaderElection":   map[string]any{"leaderElect": false},
	}
}

// CNIConfig is the conflist: a bridge with host-local IPAM over the node's
// pod subnet, and portmap for hostPort. No ipMasq: pods talk only to each
// other, to Services and to the node, all inside the subnet or local, so no
// NAT rules are needed (and none can be left behind).
func CNIConfig(c Config) ([]byte, error) {
	subnet := c.NodeSubnet()
	gw := c.NodeIP()
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       CNINetworkName,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      c.Bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": c.Layout().CNIDataDir(),
					"ranges": [][]map[string]string{{{
						"subnet":     subnet.String(),
						"rangeStart": gw.Next().String(),
						"gateway":    gw.String(),
					}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// ResolvConf is the upstream resolver file given to the kubelet for
// dnsPolicy Default pods (CoreDNS itself): it names only the cluster DNS
// Service, so nothing ever queries a resolver outside the host.
func ResolvConf(c Config) []byte {
	return []byte(fmt.Sprintf("nameserver %s\n", c.DNSServiceIP()))
}

// BridgeAddr is the address the bridge carries: the node IP in the node
// subnet.
func BridgeAddr(c Config) netip.Prefix { return netip.PrefixFrom(c.NodeIP(), c.NodeSubnet().Bits()) }
