package ztunnellog

import (
	"fmt"
	"sort"
	"strings"
)

// Hop is the pair of nodes an HBONE connection went between: the client's
// node (where its source IP lives) and the node of the ztunnel that
// accepted it.
type Hop struct{ From, To string }

// Crossings counts the HBONE connections ztunnels accepted, by whether the
// client was on another node. On a single node every count is Local, and an
// ambient number then says nothing of HBONE between two ztunnels.
type Crossings struct {
	// Crossed are the connections from a client on another node, by hop.
	Crossed map[Hop]int
	// Example is one logged line per hop, the evidence as ztunnel wrote it.
	Example map[Hop]string
	// Local are the connections whose client was on the accepting node.
	Local int
	// Unplaced are the connections whose source IP no node claims (a pod
	// deleted since, on a cluster without per-node pod CIDRs).
	Unplaced int
}

// Total is every HBONE connection counted.
func (c Crossings) Total() int {
	n := c.Local + c.Unplaced
	for _, k := range c.Crossed {
		n += k
	}
	return n
}

// CountCrossings counts the inbound HBONE lines (dst.hbone_addr set) to
// pods in namespace ns ("" for any) in each node's ztunnel log, given as
// the node a ztunnel runs on to its lines; nodeOf names the node of a
// source IP ("" when none does). The destination's inbound line is the one
// to read: its src.addr is the client pod's (or waypoint's) own IP, and
// the line exists only if the tunnel reached that ztunnel.
func CountCrossings(byNode map[string][]Access, ns string, nodeOf func(ip string) string) Crossings {
	c := Crossings{Crossed: map[Hop]int{}, Example: map[Hop]string{}}
	for node, entries := range byNode {
		for _, a := range entries {
			if a.Direction != "inbound" || a.HBONE == "" || (ns != "" && a.DstNamespace != ns) {
				continue
			}
			from := nodeOf(a.SrcIP())
			switch {
			case from == "":
				c.Unplaced++
			case from == node:
				c.Local++
			default:
				h := Hop{From: from, To: node}
				c.Crossed[h]++
				if _, ok := c.Example[h]; !ok {
					c.Example[h] = a.Line
				}
			}
		}
	}
	return c
}

// String says it in a line for the report, hops sorted, with one line of
// ztunnel's log as the evidence of the busiest hop.
func (c Crossings) String() string {
	hops := make([]Hop, 0, len(c.Crossed))
	crossed := 0
	for h, n := range c.Crossed {
		hops = append(hops, h)
		crossed += n
	}
	sort.Slice(hops, func(i, j int) bool {
		if c.Crossed[hops[i]] != c.Crossed[hops[j]] {
			return c.Crossed[hops[i]] > c.Crossed[hops[j]]
		}
		if hops[i].From != hops[j].From {
			return hops[i].From < hops[j].From
		}
		return hops[i].To < hops[j].To
	})
	s := fmt.Sprintf("%d of %d HBONE connection(s) crossed nodes", crossed, c.Total())
	if len(hops) > 0 {
		parts := make([]string, len(hops))
		for i, h := range hops {
			parts[i] = fmt.Sprintf("%s -> %s %d", h.From, h.To, c.Crossed[h])
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	s += fmt.Sprintf(", %d stayed on one node", c.Local)
	if c.Unplaced > 0 {
		s += fmt.Sprintf(", %d from an address no node claims", c.Unplaced)
	}
	if len(hops) > 0 {
		s += "; e.g. on " + hops[0].To + ": " + strings.TrimSpace(c.Example[hops[0]])
	}
	return s
}
