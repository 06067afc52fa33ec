package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// istio-cni's setting and ztunnel's build are stated in the environment and
// beside the ambient modes' measurements, not beside mode none's; without
// them nothing is said.
func TestMarkdownStatesIstioCNIAndZtunnel(t *testing.T) {
	data, err := os.ReadFile(claimstest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := claims.Parse(data, "claims.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const cni = "native nftables (local provider only: kube-router#1918); probe set seen on the host: nftables set inet istio-ambient-nat istio-inpod-probes-v4"
	entry := func(m mode.Mode) Entry {
		return Entry{Verdict: verdict.Verdict{Claim: "mtls.plaintext-blocked", Mode: m, Result: verdict.Recorded, MeasuredText: "EOF"}, Metric: claims.Outcome}
	}
	const zt = "ztunnel unknown (git unknown, Modified, release, Rust 1.95.0, tls-aws-lc), from pod istio-system/ztunnel-tjwrx"
	res := &Results{Environment: Environment{RunID: "r", Provider: "local", Modes: []mode.Mode{mode.None, mode.AmbientL4}, IstioCNI: cni, Ztunnel: zt},
		Entries: []Entry{entry(mode.None), entry(mode.AmbientL4)}, Summary: map[verdict.Result]int{verdict.Recorded: 2}}
	var b bytes.Buffer
	if err := Markdown(&b, res, reg); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	ambient := md[strings.Index(md, "## Mode ambient-l4"):]
	none := md[strings.Index(md, "## Mode none"):strings.Index(md, "## Mode ambient-l4")]
	if !strings.Contains(md, "| istio-cni | "+cni+" |") {
		t.Errorf("environment lacks istio-cni:\n%s", md)
	}
	if !strings.Contains(ambient, "Measured with istio-cni: "+cni+".") {
		t.Errorf("ambient-l4 section does not state istio-cni:\n%s", ambient)
	}
	if !strings.Contains(md, "| ztunnel | "+zt+" |") || !strings.Contains(ambient, "Measured with "+zt+".") {
		t.Errorf("ztunnel's build not stated in the environment and the ambient-l4 section:\n%s", md)
	}
	if strings.Contains(none, "istio-cni") || strings.Contains(none, "ztunnel") {
		t.Errorf("mode none's section states istio-cni or ztunnel:\n%s", none)
	}
	res.Environment.IstioCNI, res.Environment.Ztunnel = "", ""
	b.Reset()
	if err := Markdown(&b, res, reg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "istio-cni") || strings.Contains(b.String(), "ztunnel unknown") {
		t.Errorf("no setting, yet the report states one:\n%s", b.String())
	}
}
