package proxydump

import (
	"bufio"
	"fmt"
	"strings"
)

// KubeRouterPolicyRules reports whether `iptables-save -t filter` output
// holds kube-router's rules for NetworkPolicy name on the pod IPs podIPs:
// for each pod the policy selects, kube-router inserts into the pod's
// firewall chain (KUBE-POD-FW-*) a rule commented "run through nw policy
// <name>" that jumps to the policy's chain KUBE-NWPLCY-<hash>, and declares
// that chain (kube-router v2 pkg/controllers/netpol pod.go, policy.go). The
// chain's hash includes the sync's version, so it is found by the jump, not
// computed. Every pod IP must have its jump: a policy programmed for one
// echo pod but not yet the other is not programmed.
func KubeRouterPolicyRules(iptablesSave, name string, podIPs []string) (found bool, seen string, err error) {
	if !strings.Contains(iptablesSave, "*filter") {
		return false, "", fmt.Errorf("not iptables-save output of the filter table (no *filter line)")
	}
	if len(podIPs) == 0 {
		return false, "", fmt.Errorf("no pod IPs to look for NetworkPolicy %s's rules on", name)
	}
	chains := map[string]bool{}
	jumps := map[string]string{} // pod IP -> policy chain
	comment := `--comment "run through nw policy ` + name + `"`
	sc := bufio.NewScanner(strings.NewReader(iptablesSave))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ":KUBE-NWPLCY-") {
			chains[strings.Fields(line)[0][1:]] = true
			continue
		}
		if !strings.HasPrefix(line, "-A KUBE-POD-FW-") || !strings.Contains(line, comment) {
			continue
		}
		f := strings.Fields(line)
		var ip, target string
		for i := 0; i+1 < len(f); i++ {
			switch f[i] {
			case "-d", "-s":
				ip = strings.TrimSuffix(f[i+1], "/32")
			case "-j":
				target = f[i+1]
			}
		}
		if !strings.HasPrefix(target, "KUBE-NWPLCY-") {
			continue
		}
		if ip == "" {
			// A policy of both directions jumps without an address:
			// it is the pod's whole firewall chain's.
			ip = "*"
		}
		jumps[ip] = target
	}
	var missing []string
	for _, ip := range podIPs {
		c, ok := jumps[ip]
		if !ok {
			c, ok = jumps["*"]
		}
		if !ok || !chains[c] {
			missing = append(missing, ip)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("no kube-router jump to a KUBE-NWPLCY chain for policy %s on %s", name, strings.Join(missing, ", ")), nil
	}
	return true, fmt.Sprintf("kube-router rules for policy %s on %s", name, strings.Join(podIPs, ", ")), nil
}
