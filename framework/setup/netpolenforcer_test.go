package setup

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/netpolenforcer"
)

func TestNetPolEnforcerVerdict(t *testing.T) {
	specs := []string{"netpol.app-port-only [none]"}
	agentOff := netpolenforcer.Found{Name: "Amazon VPC CNI network policy agent", Where: "kube-system/aws-node[aws-eks-nodeagent]", Off: "--enable-network-policy=false"}
	calico := netpolenforcer.Found{Name: "Calico", Where: "calico-system/calico-node[calico-node]"}
	cases := []struct {
		name    string
		res     netpolenforcer.Result
		enable  bool
		wantErr []string // "" slice: no error
		want    string
	}{
		{"nothing found", netpolenforcer.Result{DaemonSets: 2}, false,
			[]string{"1 selected spec(s) need NetworkPolicy enforcement (netpol.app-port-only [none])", "none of the 2 DaemonSets runs one of: Calico", "-netpol-enforcer=NAME", "Nothing was written"}, ""},
		{"the VPC CNI agent off", netpolenforcer.Result{DaemonSets: 3, Found: []netpolenforcer.Found{agentOff}}, false,
			[]string{"enforcement off: --enable-network-policy=false", `enableNetworkPolicy: "true"`}, ""},
		{"off, with the command that turns it on", netpolenforcer.Result{DaemonSets: 3, Found: []netpolenforcer.Found{agentOff}}, true,
			nil, "to be turned on by -netpol-enable-command"},
		{"Calico (positive control)", netpolenforcer.Result{DaemonSets: 3, Found: []netpolenforcer.Found{calico}}, false,
			nil, "NetworkPolicy enforcer: Calico (calico-system/calico-node[calico-node])"},
		{"cannot list DaemonSets", netpolenforcer.Result{Unreadable: "listing DaemonSets in every namespace is forbidden to this user"}, false,
			nil, "not looked up (listing DaemonSets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			note, err := netPolEnforcerVerdict(c.res, specs, c.enable)
			if len(c.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; note %q", note)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not say %q: %v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(note, c.want) {
				t.Errorf("note %q does not say %q", note, c.want)
			}
		})
	}
}
