package lifecycle

// VolumeState is Volume status.state.
type VolumeState string

// Volume states (Longhorn's VolumeState).
const (
	VolumeCreating  VolumeState = "creating"
	VolumeDetached  VolumeState = "detached"
	VolumeAttaching VolumeState = "attaching"
	VolumeAttached  VolumeState = "attached"
	VolumeDetaching VolumeState = "detaching"
	VolumeDeleting  VolumeState = "deleting"
)

// VolumeObserved is what the volume controller sees of a volume and its
// children.
type VolumeObserved struct {
	Deleting bool
	// EngineExists: the volume's Engine object exists. ReplicasCreated: as
	// many Replica objects as spec.numberOfReplicas (or more) exist.
	EngineExists    bool
	ReplicasCreated bool
	// DesiredNode is spec.nodeID (set by the VolumeAttachment controller
	// from the winning ticket); CurrentNode is status.currentNodeID.
	DesiredNode string
	CurrentNode string
	// Engine is the engine's status.currentState ("" = no engine).
	Engine InstanceState
	// FrontendPending: the engine runs with a frontend (nbd, iscsi) whose
	// endpoint it has not reported yet; the volume is not usable until then.
	FrontendPending bool
	// Startable counts replicas that are scheduled and not failed;
	// StartableRunning counts those whose process runs.
	Startable        int
	StartableRunning int
	// ReplicasStopped: no replica process is running or starting.
	ReplicasStopped bool
	// ChildrenGone: neither the engine nor any replica object is left
	// (during deletion).
	ChildrenGone bool
}

// VolumeAction is a step the volume controller carries out.
type VolumeAction string

// Volume actions.
const (
	ActionStartReplicas    VolumeAction = "start-replicas"     // desired running, nodeID = own node, for startable replicas
	ActionStartEngine      VolumeAction = "start-engine"       // engine desired running on CurrentNode with running replicas
	ActionStopEngine       VolumeAction = "stop-engine"        // engine desired stopped
	ActionStopReplicas     VolumeAction = "stop-replicas"      // replicas desired stopped
	ActionSetCurrentNode   VolumeAction = "set-current-node"   // status.currentNodeID = DesiredNode
	ActionClearCurrentNode VolumeAction = "clear-current-node" // status.currentNodeID = ""
	ActionDeleteChildren   VolumeAction = "delete-children"    // delete engine and replicas (with their data)
	ActionRemoveFinalizer  VolumeAction = "remove-finalizer"
	ActionDetachedUnexpect VolumeAction = "event-detached-unexpectedly"
)

// volumeStep is the per-state behaviour.
type volumeStep func(VolumeObserved) (VolumeState, []VolumeAction)

var volumeSteps map[VolumeState]volumeStep

func init() {
	volumeSteps = map[VolumeState]volumeStep{
		"":              stepVolumeCreating,
		VolumeCreating:  stepVolumeCreating,
		VolumeDetached:  stepVolumeDetached,
		VolumeAttaching: stepVolumeAttaching,
		VolumeAttached:  stepVolumeAttached,
		VolumeDetaching: stepVolumeDetaching,
		VolumeDeleting:  stepVolumeDeleting,
	}
}

// NextVolume advances the volume's attach lifecycle (Longhorn's
// ReconcileVolumeState, v1 without migration). Transition table:
//
//	state      observed                                        -> state      actions
//	any        deletion requested                              -> deleting   stop-engine, stop-replicas, clear-current-node
//	creating   engine and all replica objects exist            -> detached
//	detached   desired node set, at least one startable        -> attaching  set-current-node, start-replicas
//	detached   otherwise                                       -> detached   stop-engine, stop-replicas
//	attaching  desired node cleared or changed                 -> detaching  stop-engine
//	attaching  engine running, frontend endpoint not reported  -> attaching
//	attaching  engine running                                  -> attached
//	attaching  no startable replica (all failed)               -> detaching  stop-engine
//	attaching  every startable replica running                 -> attaching  start-engine
//	attaching  otherwise                                       -> attaching  start-replicas
//	attached   desired node cleared or changed                 -> detaching  stop-engine
//	attached   engine unknown (its node is down)               -> attached   (robustness says unknown)
//	attached   engine not running any more                     -> detaching  stop-engine, event
//	attached   otherwise                                       -> attached   start-replicas (new ones)
//	detaching  engine still present and not stopped            -> detaching  stop-engine
//	detaching  engine stopped, replicas still running          -> detaching  stop-replicas
//	detaching  engine and replicas stopped                     -> detached   clear-current-node
//	deleting   children left                                   -> deleting   delete-children
//	deleting   children gone                                   -> deleting   remove-finalizer
func NextVolume(s VolumeState, o VolumeObserved) (VolumeState, []VolumeAction) {
	if o.Deleting && s != VolumeDeleting {
		return VolumeDeleting, []VolumeAction{ActionStopEngine, ActionStopReplicas, ActionClearCurrentNode}
	}
	step, ok := volumeSteps[s]
	if !ok {
		step = stepVolumeCreating
	}
	return step(o)
}

func stepVolumeCreating(o VolumeObserved) (VolumeState, []VolumeAction) {
	if o.EngineExists && o.ReplicasCreated {
		return VolumeDetached, nil
	}
	return VolumeCreating, nil
}

func stepVolumeDetached(o VolumeObserved) (VolumeState, []VolumeAction) {
	if o.DesiredNode != "" && o.Startable > 0 {
		return VolumeAttaching, []VolumeAction{ActionSetCurrentNode, ActionStartReplicas}
	}
	return VolumeDetached, []VolumeAction{ActionStopEngine, ActionStopReplicas}
}

func stepVolumeAttaching(o VolumeObserved) (VolumeState, []VolumeAction) {
	switch {
	case o.DesiredNode == "" || o.DesiredNode != o.CurrentNode:
		return VolumeDetaching, []VolumeAction{ActionStopEngine}
	case o.Engine == InstanceRunning && o.FrontendPending:
		return VolumeAttaching, nil
	case o.Engine == InstanceRunning:
		return VolumeAttached, nil
	case o.Startable == 0:
		// Every replica failed while attaching: detach, so that auto-salvage
		// (detached volumes only) can bring the newest back and the
		// attachment ticket attaches again.
		return VolumeDetaching, []VolumeAction{ActionStopEngine}
	case o.StartableRunning == o.Startable:
		return VolumeAttaching, []VolumeAction{ActionStartEngine}
	}
	return VolumeAttaching, []VolumeAction{ActionStartReplicas}
}

func stepVolumeAttached(o VolumeObserved) (VolumeState, []VolumeAction) {
	switch {
	case o.DesiredNode == "" || o.DesiredNode != o.CurrentNode:
		return VolumeDetaching, []VolumeAction{ActionStopEngine}
	case o.Engine == InstanceUnknown:
		return VolumeAttached, nil
	case o.Engine != InstanceRunning:
		return VolumeDetaching, []VolumeAction{ActionStopEngine, ActionDetachedUnexpect}
	}
	return VolumeAttached, []VolumeAction{ActionStartReplicas}
}

func stepVolumeDetaching(o VolumeObserved) (VolumeState, []VolumeAction) {
	switch {
	case o.Engine != "" && o.Engine != InstanceStopped:
		return VolumeDetaching, []VolumeAction{ActionStopEngine}
	case !o.ReplicasStopped:
		return VolumeDetaching, []VolumeAction{ActionStopEngine, ActionStopReplicas}
	}
	return VolumeDetached, []VolumeAction{ActionStopEngine, ActionStopReplicas, ActionClearCurrentNode}
}

func stepVolumeDeleting(o VolumeObserved) (VolumeState, []VolumeAction) {
	if o.ChildrenGone {
		return VolumeDeleting, []VolumeAction{ActionRemoveFinalizer}
	}
	return VolumeDeleting, []VolumeAction{ActionStopEngine, ActionStopReplicas, ActionDeleteChildren}
}
