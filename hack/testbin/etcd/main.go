// Command etcd is the upstream etcd server (go.etcd.io/etcd/server/v3), built
// for the test bed's control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
