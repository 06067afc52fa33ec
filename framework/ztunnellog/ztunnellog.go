// Package ztunnellog reads ztunnel's access log (Istio 1.30's ztunnel,
// plain format, the default) and tells which HBONE tunnel a connection rode.
//
// ztunnel writes one line per proxied connection when it ends (target
// "access", message "connection complete"; src/proxy/metrics.rs), in its
// own tab-separated format (src/telemetry.rs):
//
//	TIME<TAB>LEVEL<TAB>access<TAB>connection complete<TAB>src.addr=IP:PORT ... dst.addr=IP:15008 dst.hbone_addr=IP:8080 ... direction="inbound" ... duration="3ms"
//
// and the kubelet's log API, asked for timestamps, puts its own RFC 3339
// time and a space before each line (testdata/ holds lines of a real run).
//
// On the destination's ztunnel (direction="inbound") src.addr is the peer of
// the HBONE connection: the client pod's IP and the tunnel's own source port.
// ztunnel pools HBONE connections per (source IP, destination, identities)
// and reuses one for every new request while it is in use at least every
// POOL_UNUSED_RELEASE_TIMEOUT (5 min), so many inbound lines share one
// src.addr. A tunnel's opening is not logged at the default level; its
// earliest known use is the earliest start (end minus duration) of any line
// with its src.addr.
package ztunnellog

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"
)

// Access is one "connection complete" line.
type Access struct {
	End                                                  time.Time // when ztunnel logged it (the connection's end)
	Duration                                             time.Duration
	Level                                                string // info, or error/warn for a failed connection
	Direction                                            string // inbound or outbound
	Src                                                  string // src.addr, IP:port
	Dst                                                  string // dst.addr, IP:port (15008 for HBONE)
	HBONE                                                string // dst.hbone_addr, the app address inside the tunnel; "" for plain TCP
	SrcWorkload, SrcNamespace, DstWorkload, DstNamespace string
	Error                                                string
	Line                                                 string // the line as logged
}

// Start is when the connection began: its end less its duration.
func (a Access) Start() time.Time { return a.End.Add(-a.Duration) }

// SrcIP is src.addr's IP.
func (a Access) SrcIP() string { return hostOf(a.Src) }

// Parse returns the "connection complete" lines of a ztunnel log, in log
// order. Other lines are skipped; a "connection complete" line it cannot
// read is an error naming it, since a detector that silently skips lines
// would miss the tunnel it looks for.
func Parse(log string) ([]Access, error) {
	var out []Access
	for _, l := range strings.Split(log, "\n") {
		l = strings.TrimRight(l, "\r")
		parts := strings.SplitN(withoutKubeletTime(l), "\t", 4)
		if len(parts) < 4 || parts[2] != "access" || !strings.HasPrefix(parts[3], "connection complete") {
			continue
		}
		a, err := parseLine(parts)
		if err != nil {
			return nil, fmt.Errorf("ztunnel access line %q: %w", l, err)
		}
		a.Line = l
		out = append(out, a)
	}
	return out, nil
}

// withoutKubeletTime drops the time the kubelet's log API adds before a
// line ("2026-12-02T08:16:23.867080234Z "), when there is one.
func withoutKubeletTime(l string) string {
	sp := strings.IndexByte(l, ' ')
	tab := strings.IndexByte(l, '\t')
	if sp < 0 || (tab >= 0 && tab < sp) {
		return l
	}
	if _, err := time.Parse(time.RFC3339Nano, l[:sp]); err != nil {
		return l
	}
	return l[sp+1:]
}

func parseLine(parts []string) (Access, error) {
	end, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return Access{}, fmt.Errorf("time: %w", err)
	}
	a := Access{End: end, Level: parts[1]}
	fields := fieldsOf(strings.TrimPrefix(parts[3], "connection complete"))
	a.Src, a.Dst, a.HBONE = fields["src.addr"], fields["dst.addr"], fields["dst.hbone_addr"]
	a.Direction = fields["direction"]
	a.SrcWorkload, a.SrcNamespace = fields["src.workload"], fields["src.namespace"]
	a.DstWorkload, a.DstNamespace = fields["dst.workload"], fields["dst.namespace"]
	a.Error = fields["error"]
	if a.Src == "" || a.Dst == "" || a.Direction == "" {
		return Access{}, fmt.Errorf("no src.addr, dst.addr or direction")
	}
	if d := fields["duration"]; d != "" {
		if a.Duration, err = time.ParseDuration(d); err != nil {
			return Access{}, fmt.Errorf("duration: %w", err)
		}
	}
	return a, nil
}

// fieldsOf reads tracing's key=value fields (separated by spaces, the
// first by a tab from the message); a value is
// either bare (no spaces) or a Rust debug string in double quotes with
// backslash escapes.
func fieldsOf(s string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			break
		}
		key := s[i : i+eq]
		i += eq + 1
		var val strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
			i++ // closing quote
		} else {
			j := strings.IndexAny(s[i:], " \t")
			if j < 0 {
				j = len(s) - i
			}
			val.WriteString(s[i : i+j])
			i += j
		}
		out[key] = val.String()
	}
	return out
}

// Tunnel is one HBONE connection as the destination's ztunnel saw it.
type Tunnel struct {
	Src        string    // the client's IP and the tunnel's source port
	Dst        string    // the destination's IP:15008
	FirstStart time.Time // the earliest start of a connection over it
	LastEnd    time.Time
	Streams    int // connections (HTTP CONNECT streams) logged over it
}

func (t Tunnel) String() string {
	return fmt.Sprintf("%s -> %s (first use %s, %d connection(s) until %s)", t.Src, t.Dst,
		t.FirstStart.UTC().Format("15:04:05.000"), t.Streams, t.LastEnd.UTC().Format("15:04:05.000"))
}

// InboundTunnels groups the inbound HBONE lines from clientIP (the
// destination ztunnel's view) by tunnel, earliest first.
func InboundTunnels(entries []Access, clientIP string) []Tunnel {
	by := map[string]*Tunnel{}
	for _, a := range entries {
		if a.Direction != "inbound" || a.HBONE == "" || a.SrcIP() != clientIP {
			continue
		}
		t := by[a.Src]
		if t == nil {
			t = &Tunnel{Src: a.Src, Dst: a.Dst, FirstStart: a.Start(), LastEnd: a.End}
			by[a.Src] = t
		}
		if a.Start().Before(t.FirstStart) {
			t.FirstStart = a.Start()
		}
		if a.End.After(t.LastEnd) {
			t.LastEnd = a.End
		}
		t.Streams++
	}
	out := make([]Tunnel, 0, len(by))
	for _, t := range by {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstStart.Before(out[j].FirstStart) })
	return out
}

// Carried is what the destination's log says about the tunnel(s) a
// measurement from clientIP rode, where the measurement's connections
// ended at or after since.
type Carried struct {
	// Used are the tunnels that carried a connection ending at or after
	// since (the measurement's).
	Used []Tunnel
	// Stale are those of Used already in use before the policy: their
	// connections crossed no NetworkPolicy check made under it.
	Stale []Tunnel
}

// Carrying finds the tunnels that carried clientIP's connections ending at
// or after since, and which of them were in use before policyAt.
func Carrying(entries []Access, clientIP string, since, policyAt time.Time) Carried {
	var c Carried
	for _, t := range InboundTunnels(entries, clientIP) {
		if t.LastEnd.Before(since) {
			continue
		}
		c.Used = append(c.Used, t)
		if t.FirstStart.Before(policyAt) {
			c.Stale = append(c.Stale, t)
		}
	}
	return c
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// DeniedInbound are the inbound connections to podIP that ztunnel closed
// for a policy ("connection closed due to policy rejection: ..."). A
// Running pod that never becomes Ready with such lines from its node's
// address is having its kubelet probes refused: istio-cni did not SNAT
// them to 169.254.7.127 (the pod is missing from its probe set), and
// ztunnel's STRICT policy denies plaintext from the node.
func DeniedInbound(entries []Access, podIP string) []Access {
	var out []Access
	for _, a := range entries {
		if a.Direction == "inbound" && hostOf(a.Dst) == podIP && strings.Contains(a.Error, "policy rejection") {
			out = append(out, a)
		}
	}
	return out
}
