package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// clusterOptions are part 3's local cluster: test/e2e's shape (3 real
// nodes, deploy/longhorn.yaml from the product image), on a test-bed share
// of its own (make bench-scale passes E2E_NAME and the address ranges).
type clusterOptions struct {
	name, subnet, service, pods string
	stateDir, assets, agent     string
	pause, image, manifest      string
	keep                        bool
}

func (o *clusterOptions) flags(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&o.name, "cluster-name", "lhe2e", "part 3: local cluster name (test-bed share)")
	fs.StringVar(&o.subnet, "cluster-subnet", "10.99.16.0/24", "part 3: node subnet")
	fs.StringVar(&o.service, "cluster-service-cidr", "10.99.17.0/24", "part 3: service CIDR")
	fs.StringVar(&o.pods, "cluster-pod-cidr", "10.101.0.0/16", "part 3: pod CIDR")
	fs.StringVar(&o.stateDir, "cluster-state", "", "part 3: cluster state directory (default ~/.cache/longhorn-testbed/cluster-NAME)")
	fs.StringVar(&o.assets, "cluster-assets", os.Getenv("KUBEBUILDER_ASSETS"), "part 3: control-plane binaries (make testbin)")
	fs.StringVar(&o.agent, "lhcluster", "", "part 3: lhcluster binary (node agent)")
	fs.StringVar(&o.pause, "lhpause", "", "part 3: pause binary")
	fs.StringVar(&o.image, "image-archive", "", "part 3: product image archive (make image)")
	fs.StringVar(&o.manifest, "manifest", "deploy/longhorn.yaml", "part 3: Longhorn manifest")
	fs.BoolVar(&o.keep, "cluster-keep", false, "part 3: reuse a running cluster and leave it up")
}

// config is the testbed config of o.
func (o *clusterOptions) config(longhornBin string) (cluster.Config, error) {
	var c cluster.Config
	var err error
	parse := func(s string) netip.Prefix {
		p, e := netip.ParsePrefix(s)
		if e != nil && err == nil {
			err = fmt.Errorf("%q: %w", s, e)
		}
		return p
	}
	state := o.stateDir
	if state == "" {
		home, herr := os.UserHomeDir()
		if herr != nil {
			return c, herr
		}
		state = filepath.Join(home, ".cache", "longhorn-testbed", "cluster-"+o.name)
	}
	c = cluster.Config{Name: o.name, Nodes: 3, Subnet: parse(o.subnet), ServiceCIDR: parse(o.service), PodCIDR: parse(o.pods),
		NodeMode: cluster.NodeModeContainerd, StateDir: state, AssetsDir: o.assets, AgentBinary: o.agent,
		Images: map[string]string{"longhornio/longhorn:*": longhornBin}, PauseBinary: o.pause, ImageArchives: []string{o.image}}
	if err != nil {
		return c, err
	}
	for flag, v := range map[string]string{"-cluster-assets": o.assets, "-lhcluster": o.agent, "-lhpause": o.pause, "-image-archive": o.image} {
		if v == "" {
			return c, fmt.Errorf("%s: empty (make bench-scale SCALE_PARTS=3 sets it)", flag)
		}
	}
	return c, c.Validate()
}

// lockIfShared takes the machine-wide lock test/e2e and testbed/cluster take
// for the lhe2e name (the CI's cluster); another share is the caller's.
func lockIfShared(name string) (func(), error) {
	if name != "lhe2e" {
		return func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "lhcluster-test.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// benchSettings are set once Longhorn is ready:
// storage-minimal-available-percentage 5 as test/e2e does (build machines'
// disks are often fuller than Longhorn's 25 % allows), and
// storage-over-provisioning-percentage 500: the three nodes share one disk,
// and 300 thin 1 GiB volumes of 2 replicas schedule 200 GiB on each, more
// than Longhorn's default 100 % of a 250 GiB disk minus its 30 % reserve.
var benchSettings = [][2]string{
	{"storage-minimal-available-percentage", "5"},
	{"storage-over-provisioning-percentage", "500"},
}

// clusterUp brings the cluster up with Longhorn ready (every node Ready with
// a running instance manager) and benchSettings, and returns a connection.
func clusterUp(ctx context.Context, c *cluster.Config, o clusterOptions, logf func(string, ...any)) (*framework.Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	if !o.keep {
		if err := cluster.Down(*c, logf); err != nil {
			return nil, fmt.Errorf("removing a leftover cluster: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.StateDir, "state.json")); !o.keep || err != nil {
		if _, err := cluster.Up(ctx, *c, logf); err != nil {
			return nil, fmt.Errorf("cluster up: %w", err)
		}
		if err := cluster.ApplyManifest(ctx, c, o.manifest, 4*time.Minute, logf); err != nil {
			return nil, fmt.Errorf("apply %s: %w", o.manifest, err)
		}
	}
	f, err := framework.Connect(ctx, c.KubeconfigPath())
	if err != nil {
		return nil, err
	}
	var why string
	err = pollUntil(ctx, time.Second, 4*time.Minute, func() bool {
		why = notReady(ctx, f, c)
		return why == ""
	})
	if err != nil {
		return nil, fmt.Errorf("longhorn not ready: %s: %w", why, err)
	}
	for _, s := range benchSettings {
		err = pollUntil(ctx, time.Second, time.Minute, func() bool {
			why = fmt.Sprint(f.SetSetting(ctx, s[0], s[1]))
			return why == "<nil>"
		})
		if err != nil {
			return nil, fmt.Errorf("setting %s: %s: %w", s[0], why, err)
		}
	}
	return f, nil
}

// notReady names what is missing before Longhorn is ready, "" when nothing.
func notReady(ctx context.Context, f *framework.Cluster, c *cluster.Config) string {
	nodes, err := f.LH.LonghornV1beta2().Nodes(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	ims, err := f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	ready, running := map[string]bool{}, map[string]bool{}
	for _, n := range nodes.Items {
		ready[n.Name] = longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady).Status == longhorn.ConditionStatusTrue
	}
	for _, im := range ims.Items {
		running[im.Spec.NodeID] = running[im.Spec.NodeID] || im.Status.CurrentState == longhorn.InstanceManagerStateRunning
	}
	for i := 1; i <= c.Nodes; i++ {
		if n := c.NodeName(i); !ready[n] || !running[n] {
			return fmt.Sprintf("node %s: Ready %v, instance manager running %v", n, ready[n], running[n])
		}
	}
	return ""
}

// pollUntil calls cond every interval until it holds or timeout passes.
func pollUntil(ctx context.Context, interval, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
	return nil
}
