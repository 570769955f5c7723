package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	lhclient "github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// lhNamespace is where deploy/longhorn.yaml installs Longhorn.
const lhNamespace = "longhorn-system"

// longhornReady waits until every node has a Ready Longhorn Node (lhn) and
// a running instance manager. On timeout the error lists what was missing.
func longhornReady(ctx context.Context, c *cluster.Config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		return err
	}
	lh, err := lhclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var missing []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		nodes, err := lh.LonghornV1beta2().Nodes(lhNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			missing = append(missing, "lhn list: "+err.Error())
			return false, nil
		}
		ready := map[string]bool{}
		for _, n := range nodes.Items {
			ready[n.Name] = longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady).Status == longhorn.ConditionStatusTrue
		}
		ims, err := lh.LonghornV1beta2().InstanceManagers(lhNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			missing = append(missing, "im list: "+err.Error())
			return false, nil
		}
		running := map[string]bool{}
		for _, im := range ims.Items {
			if im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
				running[im.Spec.NodeID] = true
			}
		}
		for i := 1; i <= c.Nodes; i++ {
			n := c.NodeName(i)
			if !ready[n] {
				missing = append(missing, "lhn "+n+" Ready")
			}
			if !running[n] {
				missing = append(missing, "instance manager on "+n+" running")
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("longhorn not ready after %.0fs: missing %s: %w", time.Since(t0).Seconds(), strings.Join(missing, ", "), err)
	}
	logf("longhorn ready on %d nodes in %.1fs", c.Nodes, time.Since(t0).Seconds())
	return nil
}

// baseSettings are set on the installed system the way a user does it
// (`kubectl patch lhs`, here the same update through the API) before any
// scenario runs. storage-minimal-available-percentage: build machines'
// disks are often more than 75 % full, and Longhorn's default of 25 %
// would leave every replica unscheduled (disk pressure).
var baseSettings = map[string]string{
	"storage-minimal-available-percentage": "5",
}

// applyBaseSettings waits for the settings to exist (the manager creates
// them at start) and sets baseSettings.
func applyBaseSettings(ctx context.Context, c *cluster.Config) error {
	f, err := framework.Connect(ctx, c.KubeconfigPath())
	if err != nil {
		return err
	}
	for name, value := range baseSettings {
		var last error
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			last = f.SetSetting(ctx, name, value)
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("setting %s=%s: %w (%v)", name, value, err, last)
		}
		logf("setting %s=%s", name, value)
	}
	return nil
}

// savePodLogs keeps the pods' logs and the Longhorn objects of a failed
// run (cluster.SavePodLogs) before the cluster goes.
func savePodLogs(c *cluster.Config) {
	dir, err := cluster.SavePodLogs(c, lhNamespace)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: pod logs:", err)
		return
	}
	logf("pod logs and Longhorn objects saved in %s", dir)
}

// dumpLogs prints the last lines of every log file of the cluster (control
// plane, node agents, the managers' pods) to stderr.
func dumpLogs(c *cluster.Config) {
	dir := filepath.Join(c.StateDir, "logs")
	var files []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		// Of the pods' logs (savePodLogs) only the managers' are printed.
		pod := filepath.Base(filepath.Dir(p)) == "pods" && !strings.HasPrefix(filepath.Base(p), "longhorn-manager-")
		if err == nil && !info.IsDir() && !pod {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(os.Stderr, "--- %s (last 40 lines)\n%s", f, tail(f, 40))
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error() + "\n"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
