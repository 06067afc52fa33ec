package main

import (
	"go.etcd.io/etcd/server/v3/etcdmain"
)

// runEtcd runs etcd's own command line, so envtest and the local provider
// can pass the flags they already know (--data-dir, --listen-client-urls, ...).
func runEtcd(args []string) int {
	etcdmain.Main(append([]string{"etcd"}, args...))
	return 0
}
