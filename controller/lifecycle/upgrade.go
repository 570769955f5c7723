package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// LiveUpgradeFrontends are the volume frontends whose engine the data plane
// hands over to a new engine while the volume stays attached (`longhorn
// engine controller --upgrade-from`): nbd on its unix socket. A volume with
// another frontend (blockdev, iscsi) or none (maintenance mode) moves to a
// new engine image at its next detach.
var LiveUpgradeFrontends = []string{"nbd"}

// EngineUpgradeCheck is what decides whether a volume's spec.image may
// change from OldImage to NewImage now: the volume's state and the facts the
// caller read from its engine, engine images and settings.
type EngineUpgradeCheck struct {
	Volume string
	// OldImage is spec.image before the change, CurrentImage
	// status.currentImage, NewImage the requested spec.image.
	OldImage, CurrentImage, NewImage string
	State                            VolumeState
	Robustness                       Robustness
	// Frontend is spec.frontend; DisableFrontend spec.disableFrontend.
	Frontend        string
	DisableFrontend bool
	// Restoring: status.restoreRequired, a standby volume, or an engine
	// replica restoring a backup. Expanding: status.expansionRequired or the
	// engine expanding.
	Restoring, Expanding bool
	// Rebuilding: a replica of the engine is WO or being rebuilt.
	Rebuilding bool
	// Migrating: spec.migrationNodeID is set.
	Migrating bool
	// StrictLocal: spec.dataLocality is strict-local.
	StrictLocal bool
	// NewImageMissingOn lists the nodes of the volume (its replicas' and the
	// attached node) where the new image is not deployed; NewImageKnown is
	// false when no EngineImage object holds NewImage.
	NewImageKnown     bool
	NewImageMissingOn []string
	// AutoUpgradeLimit is setting
	// concurrent-automatic-engine-upgrade-per-node-limit; DefaultImage is
	// setting default-engine-image.
	AutoUpgradeLimit int64
	DefaultImage     string
}

// Live reports whether the change is a live upgrade (the volume is not
// detached).
func (c EngineUpgradeCheck) Live() bool {
	return c.State != VolumeDetached && c.State != VolumeCreating && c.State != ""
}

// CheckEngineUpgrade returns why spec.image may not change from OldImage to
// NewImage, in Longhorn's wording where Longhorn refuses the same thing
// (webhook volume validator and VolumeManager.EngineUpgrade), or nil. The
// admission webhook, the REST engineUpgrade action and the automatic
// upgrade all decide with it. A change back to status.currentImage during
// an upgrade is a rollback and always allowed.
func CheckEngineUpgrade(c EngineUpgradeCheck) error {
	if c.OldImage == c.NewImage || c.OldImage == "" {
		return nil
	}
	if c.NewImage == c.CurrentImage {
		return nil // rollback
	}
	if c.OldImage != c.CurrentImage && c.CurrentImage != "" {
		return fmt.Errorf("upgrading in process for volume %s engine image from %s to %s, cannot upgrade to another engine image",
			c.Volume, c.CurrentImage, c.OldImage)
	}
	if c.AutoUpgradeLimit > 0 && c.DefaultImage != "" && c.NewImage != c.DefaultImage {
		return fmt.Errorf("upgrading to %s is not allowed. Only allow to upgrade to the default engine image %s because the setting "+
			"`Concurrent Automatic Engine Upgrade Per Node Limit` is greater than 0", c.NewImage, c.DefaultImage)
	}
	if !c.NewImageKnown {
		return fmt.Errorf("cannot upgrade engine image for volume %s from image %s to image %s: %s is not an engine image of this system",
			c.Volume, c.OldImage, c.NewImage, c.NewImage)
	}
	if len(c.NewImageMissingOn) > 0 {
		return fmt.Errorf("cannot upgrade engine image for volume %s from image %s to image %s because the engine image %s is not "+
			"deployed on the replicas' nodes or the node that the volume is attached to (missing on %s)",
			c.Volume, c.OldImage, c.NewImage, c.NewImage, strings.Join(c.NewImageMissingOn, ", "))
	}
	switch {
	case c.Restoring:
		return fmt.Errorf("cannot upgrade engine image for volume %s: it is restoring a backup", c.Volume)
	case c.Expanding:
		return fmt.Errorf("cannot upgrade engine image for volume %s: it is expanding", c.Volume)
	case c.Migrating:
		return fmt.Errorf("cannot upgrade during migration")
	}
	if !c.Live() {
		return nil
	}
	return checkLive(c)
}

// checkLive holds the refusals of a live upgrade only.
func checkLive(c EngineUpgradeCheck) error {
	detach := "; detach the volume to upgrade its engine image"
	switch {
	case c.State != VolumeAttached:
		return fmt.Errorf("cannot do live upgrade for volume %s while it is %s; wait until it is attached or detached", c.Volume, c.State)
	case c.Rebuilding:
		return fmt.Errorf("cannot do live upgrade for a unhealthy volume %s: a replica is rebuilding", c.Volume)
	case c.Robustness != RobustnessHealthy:
		return fmt.Errorf("cannot do live upgrade for a unhealthy volume %s", c.Volume)
	case c.StrictLocal:
		return fmt.Errorf("cannot do live upgrade for an attached strict-local volume %s", c.Volume)
	case c.DisableFrontend || c.Frontend == "":
		return fmt.Errorf("cannot do live upgrade for volume %s: live upgrade is not supported yet for a volume attached without a frontend%s",
			c.Volume, detach)
	case !slices.Contains(LiveUpgradeFrontends, c.Frontend):
		return fmt.Errorf("cannot do live upgrade for volume %s: live upgrade is not supported yet for frontend %s (only %s)%s",
			c.Volume, c.Frontend, strings.Join(LiveUpgradeFrontends, ", "), detach)
	}
	return nil
}

// EngineUpgradePhase is where the engine controller stands in a live
// upgrade of one engine; it is kept in the Engine's LiveUpgrade condition
// (Reason, with Status True while the engine controller holds the upgrade).
type EngineUpgradePhase string

// Engine upgrade phases.
const (
	// UpgradeIdle: no live upgrade (condition absent, or False without a
	// failure).
	UpgradeIdle EngineUpgradePhase = ""
	// UpgradeRunning: a new engine may run in the new image's instance
	// manager (created, starting, handing over).
	UpgradeRunning EngineUpgradePhase = "Upgrading"
	// UpgradeAborting: the attempt failed; the new engine is being removed
	// and the old one must serve again before the failure is reported.
	UpgradeAborting EngineUpgradePhase = "Aborting"
	// UpgradeCanceling: the engine no longer asks for the upgrade (rolled
	// back, detached); clean-up as for Aborting, then idle.
	UpgradeCanceling EngineUpgradePhase = "Canceling"
	// UpgradeFailed: the attempt failed and was cleaned up (the old engine
	// serves, no new engine runs); the volume controller rolls back.
	UpgradeFailed EngineUpgradePhase = "FailedEngineUpgrade"
)

// Holding reports whether the engine controller may still use the new
// replicas (a new engine may run or the old engine may not serve yet): the
// volume controller must not remove them.
func (p EngineUpgradePhase) Holding() bool {
	return p == UpgradeRunning || p == UpgradeAborting || p == UpgradeCanceling
}

// EngineUpgradeObserved is what the engine controller sees for one engine.
type EngineUpgradeObserved struct {
	Phase EngineUpgradePhase
	// Want: the engine runs, is not being deleted, and its spec asks for
	// another image (spec.image != status.currentImage) with
	// spec.upgradedReplicaAddressMap set.
	Want bool
	// Requested: the engine's spec still asks for the upgrade
	// (spec.upgradedReplicaAddressMap set, spec.image not the image it
	// runs), whether or not the engine runs: a failure stays reported until
	// the volume controller has rolled the request back, also when the
	// engine was lost meanwhile.
	Requested bool
	// NewIM: the new image's instance manager runs on the engine's node.
	NewIM bool
	// NewProcess is the state of the engine's process in an instance
	// manager other than the one running the old engine; "" when absent.
	NewProcess InstanceState
	// NewError is the instance manager's error message for it.
	NewError string
	// OldServing: the old engine serves the volume (replicas open, frontend
	// up), or it does not run at all (nothing left to give back).
	OldServing bool
	// Elapsed is the time since the phase became Upgrading; Timeout bounds
	// the new engine's start (hand-over included).
	Elapsed, Timeout time.Duration
	// Waited is the time since the phase became Aborting or Canceling;
	// OldGrace bounds how long the old engine may take to serve again once
	// the new engine is gone (0: wait for ever). Past it the old engine is
	// taken for one that will never serve again: a new engine that died
	// after VolumeUpgradeDone leaves the old engine without the replicas it
	// handed over.
	Waited, OldGrace time.Duration
}

// EngineUpgradeAction is what the engine controller must do.
type EngineUpgradeAction string

// Engine upgrade actions.
const (
	// ActionCreateNewEngine starts the new engine in the new image's
	// instance manager with --upgrade-from the old one.
	ActionCreateNewEngine EngineUpgradeAction = "create-new-engine"
	// ActionDeleteNewEngine stops and removes the new engine's process.
	ActionDeleteNewEngine EngineUpgradeAction = "delete-new-engine"
	// ActionSwitch deletes the old engine's process and points status at
	// the new one (instance manager, address, currentImage).
	ActionSwitch EngineUpgradeAction = "switch"
	// ActionDeleteOldEngine deletes the old engine's process, which will not
	// serve again: the engine is then lost (error), and the volume's
	// dead-engine path (detach, attach again) restarts it with the old image
	// on the old replicas.
	ActionDeleteOldEngine EngineUpgradeAction = "delete-old-engine"
)

// EngineUpgradeStep is the outcome of NextEngineUpgrade; Message explains a
// failure (kept while Aborting and reported as Failed).
type EngineUpgradeStep struct {
	Phase   EngineUpgradePhase
	Message string
	Actions []EngineUpgradeAction
}

// NextEngineUpgrade advances the engine side of a live upgrade. The new
// engine is created only in a phase already recorded as Upgrading (so a
// controller that restarts finds it), and the failure is reported only
// after the new engine is gone and the old one serves again (the volume
// controller then removes the new replicas). An old engine that does not
// serve again within OldGrace (it had dropped the volume on
// VolumeUpgradeDone before the new engine died) is deleted: it no longer
// runs, which counts as served, and the volume restarts its engine on the
// old image and replicas. Transition table:
//
//	phase      observed                               -> phase      actions
//	idle       want                                   -> upgrading
//	idle       no want, a new process listed          -> idle       delete-new-engine
//	upgrading  no want                                -> canceling
//	upgrading  no new instance manager                -> aborting
//	upgrading  process absent                         -> upgrading  create-new-engine
//	upgrading  process starting, within Timeout       -> upgrading
//	upgrading  process starting, past Timeout         -> aborting
//	upgrading  process running                        -> idle       switch
//	upgrading  process error/stopped/stopping         -> aborting
//	aborting|  process listed                         -> same       delete-new-engine
//	canceling  process absent, old engine not serving -> same       (its self-abort takes the volume back)
//	           the same, Waited past OldGrace         -> same       delete-old-engine
//	aborting   process absent, old engine serving     -> failed
//	canceling  process absent, old engine serving     -> idle
//	failed     requested                              -> failed     (the volume controller rolls back)
//	failed     not requested                          -> idle       delete-new-engine if listed
func NextEngineUpgrade(o EngineUpgradeObserved, message string) EngineUpgradeStep {
	switch o.Phase {
	case UpgradeRunning:
		return stepUpgradeRunning(o)
	case UpgradeAborting, UpgradeCanceling:
		switch {
		case o.NewProcess != "":
			return EngineUpgradeStep{Phase: o.Phase, Message: message, Actions: []EngineUpgradeAction{ActionDeleteNewEngine}}
		case !o.OldServing && o.OldGrace > 0 && o.Waited > o.OldGrace:
			return EngineUpgradeStep{Phase: o.Phase, Message: message, Actions: []EngineUpgradeAction{ActionDeleteOldEngine}}
		case !o.OldServing:
			return EngineUpgradeStep{Phase: o.Phase, Message: message}
		case o.Phase == UpgradeAborting:
			return EngineUpgradeStep{Phase: UpgradeFailed, Message: message}
		}
		return EngineUpgradeStep{Phase: UpgradeIdle}
	case UpgradeFailed:
		if o.Requested || o.Want {
			return EngineUpgradeStep{Phase: UpgradeFailed, Message: message}
		}
	}
	switch {
	case o.Want:
		return EngineUpgradeStep{Phase: UpgradeRunning}
	case o.NewProcess != "":
		return EngineUpgradeStep{Phase: UpgradeIdle, Actions: []EngineUpgradeAction{ActionDeleteNewEngine}}
	}
	return EngineUpgradeStep{Phase: UpgradeIdle}
}

func stepUpgradeRunning(o EngineUpgradeObserved) EngineUpgradeStep {
	abort := func(msg string) EngineUpgradeStep { return EngineUpgradeStep{Phase: UpgradeAborting, Message: msg} }
	switch {
	case !o.Want:
		return EngineUpgradeStep{Phase: UpgradeCanceling}
	case !o.NewIM:
		return abort("no running instance manager of the new image on the engine's node")
	}
	switch o.NewProcess {
	case "":
		return EngineUpgradeStep{Phase: UpgradeRunning, Actions: []EngineUpgradeAction{ActionCreateNewEngine}}
	case InstanceStarting:
		if o.Timeout > 0 && o.Elapsed > o.Timeout {
			return abort(fmt.Sprintf("the new engine did not take the volume over within %v", o.Timeout))
		}
		return EngineUpgradeStep{Phase: UpgradeRunning}
	case InstanceRunning:
		return EngineUpgradeStep{Phase: UpgradeIdle, Actions: []EngineUpgradeAction{ActionSwitch}}
	}
	msg := "the new engine exited"
	if o.NewError != "" {
		msg += ": " + o.NewError
	}
	return abort(msg)
}

// CheckEngineImageDelete returns why the EngineImage of image may not be
// deleted, in Longhorn's wording (its engine image validator and REST
// handler), or nil: the default engine image (any of defaults: setting
// default-engine-image, the manager's own image) and an image whose
// status.refCount (volumes, engines and replicas using it) is not 0 stay.
func CheckEngineImageDelete(image string, refCount int, defaults ...string) error {
	if image != "" && slices.Contains(defaults, image) {
		return fmt.Errorf("unable to delete the default engine image %s", image)
	}
	if refCount != 0 {
		return fmt.Errorf("unable to delete the engine image %s while being used and refCount is %d (volumes, engines and replicas "+
			"using it; upgrade or delete them first)", image, refCount)
	}
	return nil
}
