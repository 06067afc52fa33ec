// Package conntrackvm measures HYBRID's full conntrack table in a
// disposable VM: it lays out a root directory with the in-VM program
// (cmd/conntrackvm, built static), the kernel's conntrack modules and the
// run's parameters, boots a User-Mode Linux kernel on it (framework/umlvm)
// and returns the program's typed result. A VM because nf_conntrack_max is
// writable only in the init network namespace of a kernel, and the host's
// is shared; the source itself used a disposable VM.
package conntrackvm

import (
	"github.com/meshclaims/meshclaims/framework/conntrackfill"
)

// The root directory the VM boots on (hostfs), as both sides see it: the
// host at <dir>/<name>, the VM at /<name>.
const (
	InitFile   = "init"        // the in-VM program, the kernel's init
	ParamsFile = "params.json" // GuestParams
	ResultFile = "result.json" // GuestReport
	ModulesDir = "modules"     // the .ko files GuestParams.Modules loads
)

// Module is one kernel module the in-VM program loads, in order.
type Module struct {
	// File is the module's file name under ModulesDir.
	File string `json:"file"`
	// Args are its parameters (nf_conntrack: enable_hooks=1).
	Args string `json:"args,omitempty"`
}

// GuestParams is what the in-VM program reads from ParamsFile.
type GuestParams struct {
	Modules []Module             `json:"modules"`
	Fill    conntrackfill.Params `json:"fill"`
}

// GuestReport is what the in-VM program writes to ResultFile before it
// powers the VM off: the result, or the error that stopped it.
type GuestReport struct {
	Result *conntrackfill.Result `json:"result,omitempty"`
	Error  string                `json:"error,omitempty"`
	// KernelLog holds the VM kernel's messages about conntrack and the
	// SYN queue.
	KernelLog []string `json:"kernel_log,omitempty"`
}

// conntrackModules are the modules, in dependency order (the UML
// package's modules.dep), that make the kernel track connections with no
// ruleset: nf_conntrack registers its netfilter hooks only when a ruleset
// asks for them, or always with enable_hooks=1, its own parameter for this.
var conntrackModules = []struct {
	Path string // under the modules tree, as in modules.dep
	Args string
}{
	{"kernel/net/ipv4/netfilter/nf_defrag_ipv4.ko", ""},
	{"kernel/net/ipv6/netfilter/nf_defrag_ipv6.ko", ""},
	{"kernel/net/netfilter/nf_conntrack.ko", "enable_hooks=1"},
}
