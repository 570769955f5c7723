// Command demo is `make demo`: the main job of the product on the local
// cluster (issue 7), step by step with timings. It expects `make cluster`
// to have run (the make target does that first) and:
//
//  1. lowers storage-minimal-available-percentage only when the nodes'
//     disks would otherwise refuse the replicas (see space.go);
//  2. creates example-volume with `kubectl apply -f examples/volume.yaml`
//     (3 replicas, 1 GiB) and demo-iscsi (the same, frontend iscsi), and
//     attaches both to node-1: example-volume with frontend nbd;
//  3. writes known data sets through both frontends with qemu-img, and,
//     where the machine allows, exposes the NBD export as a file with
//     nbdfuse, attaches it with losetup, makes ext4, mounts it, writes
//     files and checksums them (all inside node-1's namespaces);
//  4. kills one replica process of example-volume with SIGKILL, follows
//     degraded -> rebuilding -> healthy, and checks every checksum again
//     (data sets re-read through the frontends, filesystem remounted).
//
// It leaves the cluster and the two volumes up; the filesystem, loop
// device and FUSE mount are removed. Re-running deletes and re-creates
// the demo volumes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

type options struct {
	kubeconfig, manifest, node string
	dataSize                   int64
	timeout                    time.Duration
	skipFS                     bool
	logDir                     string
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig of the cluster")
	flag.StringVar(&o.manifest, "manifest", "examples/volume.yaml", "the Volume manifest applied with kubectl")
	flag.StringVar(&o.node, "node", "node-1", "node to attach the volumes to")
	flag.Int64Var(&o.dataSize, "data-mib", 64, "size of each data set in MiB (1-256)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "deadline for the whole demo")
	flag.BoolVar(&o.skipFS, "skip-fs", false, "skip the nbdfuse + loop + ext4 step")
	flag.StringVar(&o.logDir, "log-dir", os.TempDir(), "where helper processes (nbdfuse) log")
	flag.Parse()
	if o.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "demo: -kubeconfig (or $KUBECONFIG) is required; `make demo` passes the local cluster's")
		os.Exit(2)
	}
	if o.dataSize < 1 || o.dataSize > 256 {
		fmt.Fprintf(os.Stderr, "demo: -data-mib %d: want 1-256\n", o.dataSize)
		os.Exit(2)
	}
	o.dataSize <<= 20
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo FAILED: %v\n", err)
		os.Exit(1)
	}
}

// demo carries what the steps share.
type demo struct {
	o      options
	c      *framework.Cluster
	t0     time.Time
	n      int
	nbd    framework.Endpoint
	iscsi  framework.Endpoint
	fs     *nodeFS
	sums   map[string]string // file -> sha256 on the demo filesystem
	killed killState
	writer *writer
}

const (
	nbdVolume   = "example-volume"
	iscsiVolume = "demo-iscsi"
	ticketID    = "demo"
)

// Data sets: on demo-iscsi from offset 0; on example-volume in the last
// part of the volume, past the filesystem (the loop device is limited to
// fsLimit bytes).
const fsLimit = 768 << 20

func (d *demo) iscsiData() framework.DataSet {
	return framework.DataSet{Seed: 0x15c5, Offset: 0, Size: d.o.dataSize}
}

func (d *demo) nbdData() framework.DataSet {
	return framework.DataSet{Seed: 0x0b0d, Offset: 1<<30 - d.o.dataSize, Size: d.o.dataSize}
}

func run(ctx context.Context, o options) error {
	if os.Geteuid() != 0 {
		return errors.New("run as root: the demo enters the node namespaces (nsenter) and kills a replica process")
	}
	abs, err := filepath.Abs(o.manifest)
	if err != nil {
		return err
	}
	o.manifest = abs
	d := &demo{o: o, t0: time.Now(), sums: map[string]string{}}
	defer d.cleanupFS()
	steps := []struct {
		title string
		fn    func(context.Context) (string, error)
	}{
		{"connect to the cluster", d.connect},
		{"settings", d.settings},
		{"clean up an earlier run", d.cleanEarlier},
		{"create " + nbdVolume + " (kubectl apply -f " + filepath.Base(o.manifest) + ")", d.createNBDVolume},
		{"create " + iscsiVolume + " (frontend iscsi)", d.createISCSIVolume},
		{"attach " + nbdVolume + " to " + o.node + " with frontend nbd", d.attachNBD},
		{"attach " + iscsiVolume + " to " + o.node + " with frontend iscsi", d.attachISCSI},
		{"write data sets through both frontends (qemu-img)", d.writeData},
		{"filesystem through the kernel: nbdfuse + losetup + mkfs.ext4 + mount", d.makeFS},
		{"kill -9 one replica process of " + nbdVolume, d.killReplica},
		{"volume degraded -> replica rebuilt -> healthy", d.waitRebuild},
		{"verify: data sets re-read through nbd and iscsi", d.verifyData},
		{"verify: remount the filesystem and re-hash", d.verifyFS},
		{"clean up the filesystem (volumes stay)", d.finishFS},
	}
	for _, s := range steps {
		d.n++
		fmt.Printf("\n[%2d/%d] %s\n", d.n, len(steps), s.title)
		t := time.Now()
		msg, err := s.fn(ctx)
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", d.n, s.title, err)
		}
		if msg != "" {
			fmt.Println(indent(msg))
		}
		fmt.Printf("       done in %s (total %s)\n", secs(time.Since(t)), secs(time.Since(d.t0)))
	}
	fmt.Printf("\nThe demo ran in %s. The cluster and the volumes stay up:\n", secs(time.Since(d.t0)))
	fmt.Printf("  export KUBECONFIG=%s\n  %s -n longhorn-system get lhv,lhe,lhr,lhn\n", o.kubeconfig, d.c.KubectlPath)
	fmt.Println("  make cluster-down   # when you are done")
	return nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func indent(s string) string {
	out := "       "
	for i := 0; i < len(s); i++ {
		out += string(s[i])
		if s[i] == '\n' && i+1 < len(s) {
			out += "       "
		}
	}
	return out
}
