// Command lhmultus is the test bed's Multus-compatible CNI meta-plugin
// (package testbed/multus): containerd runs it as the node's CNI network.
package main

import (
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/longhorn-go/longhorn/testbed/multus"
)

func main() {
	p := &multus.Plugin{
		CNI:     libcni.NewCNIConfig(filepath.SplitList(os.Getenv("CNI_PATH")), nil),
		Cluster: multus.NewKubeCluster,
	}
	skel.PluginMainFuncs(skel.CNIFuncs{Add: p.Add, Del: p.Del, Check: p.Check},
		version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"), "lhmultus: Multus-compatible meta-plugin of the longhorn test bed")
}
