// Command k8s is one multi-call binary holding the Kubernetes components the
// suite runs as host processes: etcd (embedded), kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl and
// kubeadm (which the kind node image runs to set up each node).
//
// It is its own module because k8s.io/kubernetes cannot be required directly:
// its staging modules (k8s.io/api, k8s.io/apiserver, ...) must be mapped to
// the matching v0.x releases, which would force those versions on the suite.
// One binary, linked under each component's name (envtest finds etcd and
// kube-apiserver by name), means CI compiles Kubernetes once.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeadm "k8s.io/kubernetes/cmd/kubeadm/app/cmd"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"kube-proxy":              proxy.NewProxyCommand,
	"kubectl":                 func() *cobra.Command { return kubectlcmd.NewDefaultKubectlCommand() },
	"kubeadm":                 func() *cobra.Command { return kubeadm.NewKubeadmCommand(os.Stdin, os.Stdout, os.Stderr) },
}

func names() string {
	n := []string{"etcd"}
	for k := range components {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok && name != "etcd" {
		// Called as the multi-call binary itself: the component is the first argument.
		if len(os.Args) < 2 {
			fmt.Fprintf(os.Stderr, "usage: %s COMPONENT [flags]\ncomponents: %s\n", name, names())
			os.Exit(2)
		}
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	if name == "etcd" {
		os.Exit(runEtcd(os.Args[1:]))
	}
	newCmd, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown component %q; accepted: %s\n", name, names())
		os.Exit(2)
	}
	os.Exit(cli.Run(newCmd()))
}
