package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// longhornReady waits until every node has a Ready Longhorn Node and a
// running instance manager, then lowers storage-minimal-available-percentage
// to 5 (build machines' disks are often more than 75 % full, and Longhorn's
// default 25 % would leave every replica unscheduled).
func longhornReady(ctx context.Context, c *cluster.Config) error {
	f, err := framework.Connect(ctx, c.KubeconfigPath())
	if err != nil {
		return err
	}
	t0 := time.Now()
	var missing []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		nodes, err := f.LH.LonghornV1beta2().Nodes(framework.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			missing = append(missing, "lhn list: "+err.Error())
			return false, nil
		}
		ims, err := f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			missing = append(missing, "im list: "+err.Error())
			return false, nil
		}
		ready, running := map[string]bool{}, map[string]bool{}
		for _, n := range nodes.Items {
			ready[n.Name] = longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady).Status == longhorn.ConditionStatusTrue
		}
		for _, im := range ims.Items {
			if im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
				running[im.Spec.NodeID] = true
			}
		}
		for i := 1; i <= c.Nodes; i++ {
			if n := c.NodeName(i); !ready[n] || !running[n] {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("longhorn not ready after %.0fs: missing %s: %w", time.Since(t0).Seconds(), strings.Join(missing, ", "), err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = f.SetSetting(ctx, "storage-minimal-available-percentage", "5")
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("setting storage-minimal-available-percentage: %w (%v)", err, last)
	}
	return nil
}
