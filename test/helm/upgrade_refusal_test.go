package helm

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// refusalVolume is the volume the upgrade test refuses to upgrade in the
// states it can hold on the cluster: 2 replicas, rebuilds capped at 1 MB/s
// (spec.replicaRebuildingBandwidthLimit) over 16 MiB of data, so a rebuild
// lasts ~16 s.
const refusalVolume = "upg-refuse"

// createRefusalVolume creates refusalVolume attached on the first node with
// 16 MiB written.
func (u *upgradeRun) createRefusalVolume() {
	u.t.Helper()
	v := framework.NewVolume(refusalVolume, upgSize, 2, longhorn.VolumeFrontendNBD)
	v.Spec.ReplicaRebuildingBandwidthLimit = 1
	_, err := u.f.CreateVolume(u.ctx, v)
	u.must(err)
	_, err = u.f.WaitVolume(u.ctx, refusalVolume, 2*time.Minute, framework.All(framework.StateIs(longhorn.VolumeStateDetached), framework.Scheduled()))
	u.must(err)
	ep, err := u.f.Attach(u.ctx, refusalVolume, u.c.NodeName(1), "upgrade", longhorn.VolumeFrontendNBD, 2*time.Minute)
	u.must(err)
	u.must(u.f.WriteData(u.ctx, ep, framework.DataSet{Seed: 7, Size: 16 << 20}))
	_, err = u.f.WaitVolume(u.ctx, refusalVolume, 2*time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessHealthy))
	u.must(err)
}

// checkRefusals asks to move refusalVolume to img while it is degraded (a
// third replica cannot be placed on two nodes) and while a replica
// rebuilds (one deleted), expecting the admission webhook's refusal each
// time, then deletes the volume (its old-image instances would keep the old
// instance managers).
func (u *upgradeRun) checkRefusals(img string) error {
	if err := u.f.SetNumberOfReplicas(u.ctx, refusalVolume, 3); err != nil {
		return err
	}
	if _, err := u.f.WaitVolume(u.ctx, refusalVolume, time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessDegraded)); err != nil {
		return err
	}
	if err := u.expectRefusal("degraded", img, "cannot do live upgrade for a unhealthy volume "+refusalVolume, ""); err != nil {
		return err
	}
	if err := u.f.SetNumberOfReplicas(u.ctx, refusalVolume, 2); err != nil {
		return err
	}
	if _, err := u.f.WaitVolume(u.ctx, refusalVolume, time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessHealthy)); err != nil {
		return err
	}
	rs, err := u.f.Replicas(u.ctx, refusalVolume)
	if err != nil || len(rs) == 0 {
		return fmt.Errorf("replicas of %s: %v (%d)", refusalVolume, err, len(rs))
	}
	if err := u.f.LH.LonghornV1beta2().Replicas(framework.Namespace).Delete(u.ctx, rs[0].Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	// The status says degraded once the engine dropped the replica (an
	// upgrade asked before that is decided on the healthy status), and only
	// degraded until the new replica is added.
	if _, err := u.f.WaitVolume(u.ctx, refusalVolume, time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessDegraded)); err != nil {
		return err
	}
	if err := u.expectRefusal("rebuilding", img, "a replica is rebuilding", "unhealthy"); err != nil {
		return err
	}
	return u.f.DeleteVolume(u.ctx, refusalVolume, 2*time.Minute)
}

// expectRefusal patches refusalVolume's spec.image to img until the
// webhook refuses with want (30 s); a refusal saying meanwhile is retried,
// an accepted change or another refusal is an error.
func (u *upgradeRun) expectRefusal(state, img, want, meanwhile string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := u.setImage(refusalVolume, img)
		switch {
		case err == nil:
			return fmt.Errorf("spec.image of %s changed to %s while %s", refusalVolume, img, state)
		case strings.Contains(err.Error(), want):
			u.t.Logf("refused while %s: %s", state, lastLine(err.Error()))
			return nil
		case meanwhile == "" || !strings.Contains(err.Error(), meanwhile) || time.Now().After(deadline):
			return fmt.Errorf("while %s: want a refusal saying %q, got: %w", state, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
