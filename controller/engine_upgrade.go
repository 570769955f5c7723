package controller

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// engineUpgradeTimeout bounds a new engine's start in a live upgrade, its
// hand-over included (the engine bounds each call to the old engine by 60 s).
const engineUpgradeTimeout = 3 * time.Minute

// oldEngineGrace bounds how long the old engine of a failed live upgrade may
// take to serve again once the new engine is gone (its own take-back after
// the new engine died is about 3 s: a socket check and reopening the
// replicas). Past it the old engine is deleted: it dropped the volume on
// VolumeUpgradeDone, so the new engine died after taking over, and only a
// restart brings the volume back (lifecycle.ActionDeleteOldEngine).
const oldEngineGrace = 30 * time.Second

// upgradePhase reads the engine's LiveUpgrade condition.
func upgradePhase(e *longhorn.Engine) (lifecycle.EngineUpgradePhase, longhorn.Condition) {
	c := longhorn.GetCondition(e.Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade)
	if c.Status == longhorn.ConditionStatusTrue || c.Reason == string(lifecycle.UpgradeFailed) {
		return lifecycle.EngineUpgradePhase(c.Reason), c
	}
	return lifecycle.UpgradeIdle, c
}

// wantsUpgrade: the running engine's spec names another image and the new
// replicas (the volume controller set both once they run).
func wantsUpgrade(e *longhorn.Engine) bool {
	return e.DeletionTimestamp == nil && e.Spec.DesireState == longhorn.InstanceStateRunning &&
		e.Status.CurrentState == longhorn.InstanceStateRunning && e.Status.CurrentImage != "" &&
		e.Spec.Image != e.Status.CurrentImage && len(e.Spec.UpgradedReplicaAddressMap) > 0
}

// engineReplicaMap is the replica set the engine process serves: the new
// replicas once the new engine took over (status.currentImage is the new
// image) until the volume controller moves them into
// spec.replicaAddressMap, else spec.replicaAddressMap.
func engineReplicaMap(e *longhorn.Engine) map[string]string {
	if len(e.Spec.UpgradedReplicaAddressMap) > 0 && e.Status.CurrentImage != "" && e.Status.CurrentImage == e.Spec.Image {
		return e.Spec.UpgradedReplicaAddressMap
	}
	return e.Spec.ReplicaAddressMap
}

// upgradeSite is where a live upgrade's new engine runs or would run.
type upgradeSite struct {
	newIM  *longhorn.InstanceManager // the new image's running instance manager on the node
	procIM *longhorn.InstanceManager // the one listing the engine's process besides the old
	proc   longhorn.InstanceProcess
}

// findUpgradeSite looks at the node's v1 instance managers other than the
// one running the old engine.
func (c *EngineController) findUpgradeSite(ctx context.Context, e *longhorn.Engine) (upgradeSite, error) {
	var s upgradeSite
	ims, err := c.ds.ListInstanceManagersByNodeRO(ctx, e.Spec.NodeID)
	if err != nil {
		return s, err
	}
	slices.SortFunc(ims, func(a, b *longhorn.InstanceManager) int { return compareStrings(a.Name, b.Name) })
	for _, im := range ims {
		if im.Name == e.Status.InstanceManagerName || (im.Spec.DataEngine != "" && im.Spec.DataEngine != longhorn.DataEngineTypeV1) {
			continue
		}
		if im.Spec.Image == e.Spec.Image && im.Status.CurrentState == longhorn.InstanceManagerStateRunning && im.DeletionTimestamp == nil {
			s.newIM = im
		}
		if p, ok := processOf(im, e.Name, engineapi.InstanceTypeEngine); ok && s.procIM == nil {
			s.procIM, s.proc = im, p
		}
	}
	return s, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reconcileUpgrade drives the engine side of a live upgrade with
// lifecycle.NextEngineUpgrade: start the new engine in the new image's
// instance manager with --upgrade-from the old one, switch to it once it
// serves, or remove it and wait until the old engine serves again. The
// phase is kept in the LiveUpgrade condition of e's status (written by the
// caller).
func (c *EngineController) reconcileUpgrade(ctx context.Context, e *longhorn.Engine) (Result, error) {
	phase, cond := upgradePhase(e)
	want := wantsUpgrade(e)
	steady := e.Status.CurrentState == longhorn.InstanceStateRunning && e.Status.InstanceManagerName != ""
	if phase == lifecycle.UpgradeIdle && !want && !steady {
		return Done, nil
	}
	site, err := c.findUpgradeSite(ctx, e)
	if err != nil {
		return Done, err
	}
	requested := e.DeletionTimestamp == nil && len(e.Spec.UpgradedReplicaAddressMap) > 0 && e.Spec.Image != e.Status.CurrentImage
	obs := lifecycle.EngineUpgradeObserved{Phase: phase, Want: want, Requested: requested, NewIM: site.newIM != nil,
		NewProcess: lifecycle.InstanceState(site.proc.Status.State), NewError: site.proc.Status.ErrorMsg,
		Elapsed: c.now().Sub(parseTime(cond.LastTransitionTime)), Timeout: engineUpgradeTimeout}
	if (phase == lifecycle.UpgradeAborting || phase == lifecycle.UpgradeCanceling) && site.procIM == nil {
		obs.OldServing = c.oldEngineServing(ctx, e)
		// setUpgradePhase writes the condition only when it changes, so its
		// LastProbeTime is when this phase began.
		obs.Waited, obs.OldGrace = c.now().Sub(parseTime(cond.LastProbeTime)), oldEngineGrace
	}
	step := lifecycle.NextEngineUpgrade(obs, cond.Message)
	for _, a := range step.Actions {
		if err := c.upgradeAction(ctx, e, a, site); err != nil {
			return Done, err
		}
	}
	c.setUpgradePhase(e, phase, step)
	if step.Phase.Holding() {
		return WaitShort, nil
	}
	return Done, nil
}

// setUpgradePhase records step in the LiveUpgrade condition and emits the
// events of a finished attempt.
func (c *EngineController) setUpgradePhase(e *longhorn.Engine, from lifecycle.EngineUpgradePhase, step lifecycle.EngineUpgradeStep) {
	ts := c.now().UTC().Format(time.RFC3339)
	status := longhorn.ConditionStatusFalse
	if step.Phase.Holding() {
		status = longhorn.ConditionStatusTrue
	}
	cur := longhorn.GetCondition(e.Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade)
	if cur.Type != "" && cur.Status != longhorn.ConditionStatusUnknown || step.Phase != lifecycle.UpgradeIdle {
		if cur.Status != status || cur.Reason != string(step.Phase) || cur.Message != step.Message {
			e.Status.Conditions = longhorn.SetCondition(e.Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade, status,
				string(step.Phase), step.Message, ts)
		}
	}
	if step.Phase == from {
		return
	}
	switch step.Phase {
	case lifecycle.UpgradeAborting:
		c.recorder.Eventf(e, corev1.EventTypeWarning, "FailedEngineUpgrade", "Live upgrade of engine %s to %s failed, giving the volume back to the old engine: %s",
			e.Name, e.Spec.Image, step.Message)
	case lifecycle.UpgradeFailed:
		c.recorder.Eventf(e, corev1.EventTypeWarning, "FailedEngineUpgrade", "Old engine %s serves the volume again after the failed upgrade: %s", e.Name, step.Message)
	}
}

func (c *EngineController) upgradeAction(ctx context.Context, e *longhorn.Engine, a lifecycle.EngineUpgradeAction, site upgradeSite) error {
	switch a {
	case lifecycle.ActionCreateNewEngine:
		return c.createNewEngine(ctx, e, site.newIM)
	case lifecycle.ActionDeleteNewEngine:
		client, err := c.api.InstanceManager(ctx, imAddress(site.procIM.Status.IP))
		if err != nil {
			return err
		}
		if _, err := client.InstanceDelete(ctx, e.Name, engineapi.InstanceTypeEngine, ""); err != nil && !engineapi.IsNotFound(err) {
			return err
		}
	case lifecycle.ActionSwitch:
		return c.switchEngine(ctx, e, site)
	case lifecycle.ActionDeleteOldEngine:
		return c.deleteOldEngine(ctx, e)
	}
	return nil
}

// deleteOldEngine deletes the process of the old engine of a failed live
// upgrade that did not serve again within oldEngineGrace, with a
// FailedEngineUpgrade event when it was still listed. The instance handler
// then finds the engine lost, and the volume restarts it on the old image.
func (c *EngineController) deleteOldEngine(ctx context.Context, e *longhorn.Engine) error {
	if e.Status.InstanceManagerName == "" {
		return nil
	}
	oldIM, err := c.ds.GetInstanceManagerRO(ctx, e.Status.InstanceManagerName)
	switch {
	case apierrors.IsNotFound(err):
		return nil // no instance manager: nothing runs the old engine
	case err != nil:
		return err
	case oldIM.Status.IP == "":
		return fmt.Errorf("instance manager %s of the old engine %s has no IP", oldIM.Name, e.Name)
	}
	client, err := c.api.InstanceManager(ctx, imAddress(oldIM.Status.IP))
	if err != nil {
		return err
	}
	if _, err := client.InstanceDelete(ctx, e.Name, engineapi.InstanceTypeEngine, ""); err != nil {
		if engineapi.IsNotFound(err) {
			return nil
		}
		return err
	}
	c.recorder.Eventf(e, corev1.EventTypeWarning, "FailedEngineUpgrade",
		"Old engine %s did not serve volume %s again within %v after the failed upgrade to %s (it had handed the volume over "+
			"for good); deleting its process in %s so that the volume restarts on the old image", e.Name, e.Spec.VolumeName,
		oldEngineGrace, e.Spec.Image, oldIM.Name)
	return nil
}

// createNewEngine starts the engine's process in im: the same command as the
// old engine's on the new replicas, with --upgrade-from the old engine's
// gRPC address (the new engine takes the nbd socket over, has the old one
// hand the volume over, and listens only once it serves).
func (c *EngineController) createNewEngine(ctx context.Context, e *longhorn.Engine, im *longhorn.InstanceManager) error {
	next := e.DeepCopy()
	next.Spec.ReplicaAddressMap = e.Spec.UpgradedReplicaAddressMap
	spec, err := engineProcessSpec(next, im, c.engineSettings(ctx))
	if err != nil {
		return err
	}
	spec.Args = append(spec.Args, "--upgrade-from", net.JoinHostPort(e.Status.IP, strconv.Itoa(e.Status.Port)))
	l, err := volumeResourceLimits(ctx, c.ds, e.Spec.VolumeName)
	if err != nil {
		return err
	}
	spec.Limits = types.EngineLimits(l)
	client, err := c.api.InstanceManager(ctx, imAddress(im.Status.IP))
	if err != nil {
		return err
	}
	if _, err := client.InstanceCreate(ctx, spec); err != nil {
		return err
	}
	c.recorder.Eventf(e, corev1.EventTypeNormal, "UpgradingEngine", "Starting engine %s of image %s in %s to take the volume over from %s",
		e.Name, e.Spec.Image, im.Name, e.Status.InstanceManagerName)
	return nil
}

// switchEngine makes the new engine the engine: the old process goes, and
// status names the new instance manager, address and image. The new engine
// opened every new replica RW before it served, so their modes start RW.
func (c *EngineController) switchEngine(ctx context.Context, e *longhorn.Engine, site upgradeSite) error {
	if old := e.Status.InstanceManagerName; old != "" {
		oldIM, err := c.ds.GetInstanceManagerRO(ctx, old)
		if err == nil && oldIM.Status.IP != "" {
			client, err := c.api.InstanceManager(ctx, imAddress(oldIM.Status.IP))
			if err != nil {
				return err
			}
			if _, err := client.InstanceDelete(ctx, e.Name, engineapi.InstanceTypeEngine, ""); err != nil && !engineapi.IsNotFound(err) {
				return err
			}
		}
	}
	from := e.Status.CurrentImage
	im := site.procIM
	e.Status.InstanceManagerName, e.Status.IP, e.Status.Port = im.Name, im.Status.IP, int(site.proc.Status.PortStart)
	e.Status.StorageIP, e.Status.UUID, e.Status.CurrentImage = c.storageIP(im), site.proc.Status.UUID, e.Spec.Image
	modes := map[string]longhorn.ReplicaMode{}
	for n := range e.Spec.UpgradedReplicaAddressMap {
		modes[n] = longhorn.ReplicaModeRW
	}
	e.Status.ReplicaModeMap, e.Status.CurrentReplicaAddressMap = modes, e.Spec.UpgradedReplicaAddressMap
	c.forget(e.Name)
	c.recorder.Eventf(e, corev1.EventTypeNormal, "EngineUpgraded", "Engine %s upgraded live from %s to %s (now in %s)", e.Name, from, e.Spec.Image, im.Name)
	return nil
}

// oldEngineServing reports whether the old engine serves the volume again
// (its replicas open and its frontend up), or does not run at all.
func (c *EngineController) oldEngineServing(ctx context.Context, e *longhorn.Engine) bool {
	if e.Status.CurrentState != longhorn.InstanceStateRunning || e.Status.IP == "" {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client, err := c.api.Engine(cctx, imAddressOfEngine(e), engineRef(e))
	if err != nil {
		return false
	}
	v, err := client.VolumeGet(cctx)
	if err != nil {
		return false
	}
	return v.ReplicaCount > 0 && (engineFrontend(e) == "" || v.FrontendState == "up")
}
