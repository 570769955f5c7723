package lifecycle

import "time"

// ReplicaMode is a replica's mode inside the engine (Engine
// status.replicaModeMap): RW serves reads and writes, WO is being rebuilt and
// only takes writes, ERR has failed and is dropped. "" means the engine does
// not list the replica.
type ReplicaMode string

// Replica modes.
const (
	ModeRW   ReplicaMode = "RW"
	ModeWO   ReplicaMode = "WO"
	ModeERR  ReplicaMode = "ERR"
	ModeNone ReplicaMode = ""
)

// ReplicaModeAction is what the volume controller records on the Replica
// object when its mode changes.
type ReplicaModeAction string

// Replica mode actions.
const (
	// ActionMarkHealthy sets spec.healthyAt (and lastHealthyAt) to now.
	ActionMarkHealthy ReplicaModeAction = "mark-healthy"
	// ActionMarkFailed sets spec.failedAt (and lastFailedAt) to now and the
	// desired state to stopped.
	ActionMarkFailed ReplicaModeAction = "mark-failed"
	// ActionRebuildStarted notes that the replica joined as WO.
	ActionRebuildStarted ReplicaModeAction = "rebuild-started"
)

// NextReplicaMode folds the mode the engine now reports into the replica's
// last known mode. Transition table (prev -> observed):
//
//	prev       observed -> mode  actions
//	""         ""       -> ""
//	""|ERR     WO       -> WO    rebuild-started
//	""         RW       -> RW    mark-healthy   (replica present at engine start)
//	WO         RW       -> RW    mark-healthy   (rebuild finished)
//	RW|WO      RW|WO    -> same or RW as observed
//	any        ERR      -> ERR   mark-failed    (once: ERR -> ERR has no action)
//	RW|WO      ""       -> ERR   mark-failed    (dropped by the engine)
//	ERR        ""       -> ERR
//	ERR        RW       -> RW    mark-healthy
func NextReplicaMode(prev, observed ReplicaMode) (ReplicaMode, []ReplicaModeAction) {
	switch observed {
	case ModeERR:
		if prev == ModeERR {
			return ModeERR, nil
		}
		return ModeERR, []ReplicaModeAction{ActionMarkFailed}
	case ModeNone:
		if prev == ModeRW || prev == ModeWO {
			return ModeERR, []ReplicaModeAction{ActionMarkFailed}
		}
		return prev, nil
	case ModeWO:
		if prev == ModeNone || prev == ModeERR {
			return ModeWO, []ReplicaModeAction{ActionRebuildStarted}
		}
		return ModeWO, nil
	case ModeRW:
		if prev == ModeRW {
			return ModeRW, nil
		}
		return ModeRW, []ReplicaModeAction{ActionMarkHealthy}
	}
	return prev, nil
}

// RebuildState is where one replica's rebuild stands.
type RebuildState string

// Rebuild states.
const (
	RebuildIdle       RebuildState = ""
	RebuildRequested  RebuildState = "requested"
	RebuildInProgress RebuildState = "in-progress"
	RebuildCompleted  RebuildState = "completed"
	RebuildFailed     RebuildState = "failed"
)

// RebuildObserved is what the engine controller sees for one replica that the
// engine should have (it is in the engine's spec.replicaAddressMap).
type RebuildObserved struct {
	// InEngine: the engine lists the replica (any mode).
	InEngine bool
	Mode     ReplicaMode
	// ReplicaRunning: the replica process runs and has an address.
	ReplicaRunning bool
	// Allowed: the per-node concurrent rebuild limit leaves room.
	Allowed bool
	// StatusError is the engine's rebuildStatus error for this replica ("" =
	// none); StatusRebuilding is its isRebuilding flag.
	StatusError      string
	StatusRebuilding bool
	// SinceRequested is how long ago the rebuild was requested; Timeout is
	// how long a request may go unanswered before it counts as failed.
	SinceRequested time.Duration
	Timeout        time.Duration
}

// RebuildAction is what the engine controller must do.
type RebuildAction string

// Rebuild actions.
const (
	// ActionAddReplica asks the engine to add the replica (ReplicaAdd,
	// started asynchronously; progress comes back through the engine monitor).
	ActionAddReplica RebuildAction = "add-replica"
	// ActionRebuildFailed records the failure on the replica (failedAt,
	// rebuildRetryCount+1, condition RebuildFailed) and drops it.
	ActionRebuildFailed RebuildAction = "rebuild-failed"
	// ActionRebuildDone records the replica as healthy.
	ActionRebuildDone RebuildAction = "rebuild-done"
)

// NextRebuild advances one replica's rebuild (Longhorn's engine controller
// rebuildNewReplica / monitor). Transition table:
//
//	state        observed                                  -> state        actions
//	idle         in engine as RW                           -> completed
//	idle         not in engine, replica running, allowed   -> requested    add-replica
//	idle         otherwise                                 -> idle
//	requested    mode WO or engine says rebuilding         -> in-progress
//	requested|in mode RW                                   -> completed    rebuild-done
//	requested|in mode ERR or a rebuild error               -> failed       rebuild-failed
//	requested    no answer within Timeout                  -> failed       rebuild-failed
//	in-progress  replica listed as WO                      -> in-progress
//	in-progress  replica dropped from the engine           -> failed       rebuild-failed
//	completed    replica leaves the engine                 -> idle
//	failed       (terminal until the replica is replaced)  -> failed
func NextRebuild(s RebuildState, o RebuildObserved) (RebuildState, []RebuildAction) {
	switch s {
	case RebuildIdle:
		return stepRebuildIdle(o)
	case RebuildRequested, RebuildInProgress:
		return stepRebuildActive(s, o)
	case RebuildCompleted:
		// Not re-added in the same step: a replica the engine just removed
		// as ERR must first be marked failed by the volume controller (the
		// engine controller's requeue of a waiting replica brings the next
		// step).
		if !o.InEngine {
			return RebuildIdle, nil
		}
		return RebuildCompleted, nil
	}
	return RebuildFailed, nil
}

func stepRebuildIdle(o RebuildObserved) (RebuildState, []RebuildAction) {
	switch {
	case o.InEngine && o.Mode == ModeRW:
		return RebuildCompleted, nil
	case !o.InEngine && o.ReplicaRunning && o.Allowed:
		return RebuildRequested, []RebuildAction{ActionAddReplica}
	}
	return RebuildIdle, nil
}

func stepRebuildActive(s RebuildState, o RebuildObserved) (RebuildState, []RebuildAction) {
	failed := []RebuildAction{ActionRebuildFailed}
	switch {
	case o.Mode == ModeRW:
		return RebuildCompleted, []RebuildAction{ActionRebuildDone}
	case o.Mode == ModeERR || o.StatusError != "":
		return RebuildFailed, failed
	case o.Mode == ModeWO || o.StatusRebuilding:
		return RebuildInProgress, nil
	case s == RebuildInProgress:
		return RebuildFailed, failed
	case o.Timeout > 0 && o.SinceRequested > o.Timeout:
		return RebuildFailed, failed
	}
	return s, nil
}
