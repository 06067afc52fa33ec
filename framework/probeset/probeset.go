// Package probeset reads istio-cni's host probe set and names the ambient
// pods missing from it.
//
// istio-cni's ambient node agent adds every pod it redirects to ztunnel to
// a set on the node's host (cni/pkg/nodeagent and cni/pkg/config in
// istio/istio): the host's rule SNATs the kubelet's connections to an IP of
// that set to 169.254.7.127, which ztunnel's in-pod rules let through
// unmeshed. A pod missing from the set gets its probes unSNATed: they reach
// ztunnel's inbound capture from the node's IP, and with STRICT mTLS ztunnel
// denies them, so the pod never becomes Ready. In iptables mode the set is
// the ipset istio-inpod-probes-v4 (-v6); in native nftables mode it is the
// set of that name in table inet istio-ambient-nat.
package probeset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Names istio-cni gives its host state (istio.io/istio cni/pkg/config,
// cni/pkg/ipset, cni/pkg/nftables; pkg/config/constants for the pod
// annotation, which istio-cni writes once it has redirected a pod).
const (
	SetV4                 = "istio-inpod-probes-v4"
	SetV6                 = "istio-inpod-probes-v6"
	NftFamily             = "inet"
	NftTable              = "istio-ambient-nat"
	RedirectionAnnotation = "ambient.istio.io/redirection"
	RedirectionEnabled    = "enabled"
)

// Backend is where istio-cni keeps the set.
type Backend string

const (
	// Nftables: istio-cni in native nftables mode (global.nativeNftables).
	Nftables Backend = "nftables"
	// IPSet: istio-cni's default iptables mode.
	IPSet Backend = "ipset"
)

// Set is the host probe set as read.
type Set struct {
	Backend Backend
	// V6 says whether the IPv6 set exists (istio-cni makes it only with
	// IPv6 enabled, and then checks pods' IPv6 addresses too).
	V6 bool
	// IPs are the addresses in the set(s).
	IPs map[netip.Addr]bool
}

// Where names the set as its tool does.
func (s Set) Where() string {
	if s.Backend == Nftables {
		return "nftables set " + NftFamily + " " + NftTable + " " + SetV4
	}
	return "ipset " + SetV4
}

// Runner runs a program on the node's host and returns its standard output,
// or an error carrying its standard error.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// HostRunner runs the program on this host: the node's host when the suite
// runs where the node runs (the local provider).
func HostRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// ErrNoSet is returned by Read when the host has no probe set at all.
var ErrNoSet = errors.New("the host has no istio-cni probe set (neither nftables set " + NftFamily + " " + NftTable + " " + SetV4 + " nor ipset " + SetV4 + "): istio-cni's ambient node agent is not running, or has not started")

// absent reports whether a tool's error says the set (or its table) does
// not exist: nft says "No such file or directory", ipset "does not exist".
func absent(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "No such file or directory") || strings.Contains(err.Error(), "does not exist"))
}

// Read reads the probe set with run, from whichever backend has it. Both
// existing is an error: istio-cni falls back to iptables when it finds its
// ipset, so an nftables table beside it is a leftover, and which rule the
// host applies cannot be told from the sets alone.
func Read(ctx context.Context, run Runner) (Set, error) {
	nftOut, nftErr := run(ctx, "nft", "-j", "list", "set", NftFamily, NftTable, SetV4)
	ipsOut, ipsErr := run(ctx, "ipset", "save", SetV4)
	switch {
	case nftErr != nil && !absent(nftErr):
		return Set{}, fmt.Errorf("probeset: reading the nftables set: %w", nftErr)
	case ipsErr != nil && !absent(ipsErr):
		return Set{}, fmt.Errorf("probeset: reading the ipset: %w", ipsErr)
	case nftErr == nil && ipsErr == nil:
		return Set{}, fmt.Errorf("probeset: the host has both nftables set %s %s %s and ipset %s; istio-cni uses the ipset then (iptables mode) and the nftables table is a leftover", NftFamily, NftTable, SetV4, SetV4)
	case nftErr == nil:
		s := Set{Backend: Nftables, IPs: map[netip.Addr]bool{}}
		if err := addNft(s.IPs, nftOut); err != nil {
			return Set{}, err
		}
		if out, err := run(ctx, "nft", "-j", "list", "set", NftFamily, NftTable, SetV6); err == nil {
			s.V6 = true
			if err := addNft(s.IPs, out); err != nil {
				return Set{}, err
			}
		} else if !absent(err) {
			return Set{}, fmt.Errorf("probeset: reading the nftables IPv6 set: %w", err)
		}
		return s, nil
	case ipsErr == nil:
		s := Set{Backend: IPSet, IPs: map[netip.Addr]bool{}}
		if err := addIPSet(s.IPs, SetV4, string(ipsOut)); err != nil {
			return Set{}, err
		}
		if out, err := run(ctx, "ipset", "save", SetV6); err == nil {
			s.V6 = true
			if err := addIPSet(s.IPs, SetV6, string(out)); err != nil {
				return Set{}, err
			}
		} else if !absent(err) {
			return Set{}, fmt.Errorf("probeset: reading the IPv6 ipset: %w", err)
		}
		return s, nil
	}
	return Set{}, ErrNoSet
}

func addNft(to map[netip.Addr]bool, out []byte) error {
	ips, err := ParseNftSet(out)
	for _, ip := range ips {
		to[ip] = true
	}
	return err
}

func addIPSet(to map[netip.Addr]bool, name, out string) error {
	ips, err := ParseIPSetSave(name, out)
	for _, ip := range ips {
		to[ip] = true
	}
	return err
}

// ParseNftSet reads the addresses of `nft -j list set ...` output: one
// "set" object whose "elem" holds, per element, the address as a string or,
// for an element with a comment (istio-cni comments each with its pod's
// UID), {"elem": {"val": address, "comment": ...}}. An element of another
// shape (a prefix, a range: not what istio-cni adds) is an error naming it.
func ParseNftSet(out []byte) ([]netip.Addr, error) {
	var doc struct {
		Nftables []struct {
			Set *struct {
				Name string            `json:"name"`
				Elem []json.RawMessage `json:"elem"`
			} `json:"set"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("probeset: nft JSON: %w: %.200q", err, out)
	}
	var ips []netip.Addr
	found := false
	for _, o := range doc.Nftables {
		if o.Set == nil {
			continue
		}
		found = true
		for _, raw := range o.Set.Elem {
			var val string
			if json.Unmarshal(raw, &val) != nil {
				var wrapped struct {
					Elem struct {
						Val string `json:"val"`
					} `json:"elem"`
				}
				if err := json.Unmarshal(raw, &wrapped); err != nil || wrapped.Elem.Val == "" {
					return ips, fmt.Errorf("probeset: set %s: element %s is neither an address nor {\"elem\": {\"val\": address}}", o.Set.Name, raw)
				}
				val = wrapped.Elem.Val
			}
			ip, err := netip.ParseAddr(val)
			if err != nil {
				return ips, fmt.Errorf("probeset: set %s: element %q is not an address: %w", o.Set.Name, val, err)
			}
			ips = append(ips, ip)
		}
	}
	if !found {
		return nil, fmt.Errorf("probeset: nft JSON holds no set: %.200q", out)
	}
	return ips, nil
}

// ParseIPSetSave reads the addresses of set name from `ipset save` output:
// its "add <name> <address> [comment "..."]" lines. No "create <name>" line
// is an error (the output is not of that set).
func ParseIPSetSave(name, out string) ([]netip.Addr, error) {
	var ips []netip.Addr
	created := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[1] != name {
			continue
		}
		switch f[0] {
		case "create":
			created = true
		case "add":
			ip, err := netip.ParseAddr(f[2])
			if err != nil {
				return ips, fmt.Errorf("probeset: ipset %s: entry %q is not an address: %w", name, f[2], err)
			}
			ips = append(ips, ip)
		}
	}
	if !created {
		return nil, fmt.Errorf("probeset: ipset save output has no set %s: %.200q", name, out)
	}
	return ips, nil
}

// Missing is an ambient pod's IP that is not in the probe set.
type Missing struct {
	Pod string // namespace/name
	IP  netip.Addr
	Set string // Set.Where()
}

func (m Missing) Error() string {
	return fmt.Sprintf("pod %s's IP %s is not in istio-cni's host probe set (%s): kubelet probes reach ztunnel unSNATed and STRICT denies them", m.Pod, m.IP, m.Set)
}

// Check returns, for every pod istio-cni has redirected (annotated
// ambient.istio.io/redirection=enabled) and not being deleted, each IP of
// it the set lacks; IPv6 addresses only when the set has its IPv6 half.
func Check(pods []corev1.Pod, s Set) []Missing {
	var out []Missing
	for _, p := range pods {
		if p.Annotations[RedirectionAnnotation] != RedirectionEnabled || p.DeletionTimestamp != nil || p.Spec.HostNetwork {
			continue
		}
		ips := p.Status.PodIPs
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: p.Status.PodIP}}
		}
		for _, pip := range ips {
			ip, err := netip.ParseAddr(pip.IP)
			if err != nil || (ip.Is6() && !ip.Is4In6() && !s.V6) {
				continue
			}
			if !s.IPs[ip.Unmap()] {
				out = append(out, Missing{Pod: p.Namespace + "/" + p.Name, IP: ip.Unmap(), Set: s.Where()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod+out[i].IP.String() < out[j].Pod+out[j].IP.String() })
	return out
}

// Errors joins Check's findings into one error (nil: none missing).
func Errors(ms []Missing) error {
	var errs []error
	for _, m := range ms {
		errs = append(errs, m)
	}
	return errors.Join(errs...)
}

// Diagnose explains ambient pods of namespace ns that do not become Ready
// by the probe set: it lists the namespace's pods, reads the set with read
// and returns an error naming each redirected pod whose IP the set lacks;
// nil when every one is there. Reading the set failing is returned as
// what it is (no set at all is a finding too: no pod can be probed then).
func Diagnose(ctx context.Context, cs kubernetes.Interface, ns string, read func(context.Context) (Set, error)) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("probeset: listing pods in %s: %w", ns, err)
	}
	redirected := 0
	for _, p := range pods.Items {
		if p.Annotations[RedirectionAnnotation] == RedirectionEnabled {
			redirected++
		}
	}
	if redirected == 0 {
		return nil // nothing istio-cni redirected: not the probe set's doing
	}
	s, err := read(ctx)
	if err != nil {
		return fmt.Errorf("probeset: %d pods of %s are redirected to ztunnel, but istio-cni's host probe set could not be read: %w", redirected, ns, err)
	}
	return Errors(Check(pods.Items, s))
}
