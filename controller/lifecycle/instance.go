package lifecycle

// InstanceState is the state of an engine or replica process as the Engine
// and Replica objects report it (status.currentState) and as the instance
// manager reports its processes.
type InstanceState string

// Instance states (Longhorn's InstanceState enum).
const (
	InstanceRunning    InstanceState = "running"
	InstanceStopped    InstanceState = "stopped"
	InstanceStarting   InstanceState = "starting"
	InstanceStopping   InstanceState = "stopping"
	InstanceError      InstanceState = "error"
	InstanceUnknown    InstanceState = "unknown"
	InstanceSuspended  InstanceState = "suspended"
	InstanceTerminated InstanceState = "terminated"
)

// IMState is the instance manager's state (InstanceManager
// status.currentState).
type IMState string

// Instance manager states.
const (
	IMRunning  IMState = "running"
	IMStarting IMState = "starting"
	IMStopped  IMState = "stopped"
	IMError    IMState = "error"
	IMUnknown  IMState = "unknown"
)

// InstanceObserved is what the instance handler sees for one engine or
// replica.
type InstanceObserved struct {
	// Desired is spec.desireState: InstanceRunning or InstanceStopped.
	Desired InstanceState
	// IM is the state of the instance manager on the instance's node; ""
	// when there is none. IMDeleting: it is being deleted.
	IM         IMState
	IMDeleting bool
	// Process is the process state in the instance manager's list; "" when
	// the process is not listed.
	Process InstanceState
	// Started is status.started: the process reached running since the
	// instance was last asked to stop.
	Started bool
}

// InstanceAction is what the instance handler must do against the instance
// manager.
type InstanceAction string

// Instance actions.
const (
	// ActionCreateInstance starts the process (idempotent for a live one;
	// the instance manager replaces an exited record; AlreadyExists is an
	// error: another process holds the name).
	ActionCreateInstance InstanceAction = "create-instance"
	// ActionDeleteInstance stops and removes the process (idempotent).
	ActionDeleteInstance InstanceAction = "delete-instance"
	// ActionCopyAddress copies IP, storage IP and port from the instance
	// manager into status; ActionClearAddress empties them.
	ActionCopyAddress  InstanceAction = "copy-address"
	ActionClearAddress InstanceAction = "clear-address"
)

// InstanceStep is the outcome of NextInstance.
type InstanceStep struct {
	State   InstanceState
	Started bool
	Actions []InstanceAction
}

// NextInstance drives one engine or replica process toward its desired state
// (Longhorn's InstanceHandler.ReconcileInstanceState and
// syncStatusWithInstanceManager). "started" below is InstanceObserved.Started;
// a process that was started and then disappears or stops on its own is an
// error, one that never started is simply stopped.
//
//	desired  instance manager      process            -> state              actions
//	running  running, not deleting running            -> running, started   copy-address
//	running  running, not deleting starting           -> starting           clear-address
//	running  running, not deleting absent             -> error if started,  clear-address
//	                                                     else stopped       + create-instance
//	running  running, not deleting stopping/stopped   -> error if started, else stopping/stopped
//	running  running, not deleting error              -> error
//	running  unknown (node down)   any                -> unknown if started, else stopped
//	running  starting              any                -> error if started, else unchanged
//	running  stopped/error/none/deleting              -> error if started, else stopped
//	stopped  running, not deleting listed             -> process state      delete-instance, started=false
//	stopped  running, not deleting absent             -> stopped            clear-address
//	stopped  anything else                            -> stopped            clear-address, started=false
//
// An unrecognised desired state is treated as stopped.
func NextInstance(cur InstanceState, o InstanceObserved) InstanceStep {
	if o.Desired == InstanceRunning {
		return nextInstanceRunning(cur, o)
	}
	return nextInstanceStopped(o)
}

func nextInstanceRunning(cur InstanceState, o InstanceObserved) InstanceStep {
	lost := func(otherwise InstanceState) InstanceStep {
		if o.Started {
			return InstanceStep{State: InstanceError, Started: true, Actions: []InstanceAction{ActionClearAddress}}
		}
		return InstanceStep{State: otherwise, Actions: []InstanceAction{ActionClearAddress}}
	}
	switch {
	case o.IM == IMUnknown:
		if o.Started {
			return InstanceStep{State: InstanceUnknown, Started: true}
		}
		return lost(InstanceStopped)
	case o.IM == IMStarting:
		if o.Started {
			return lost(InstanceError)
		}
		return InstanceStep{State: orStopped(cur)}
	case o.IM != IMRunning || o.IMDeleting:
		return lost(InstanceStopped)
	}
	switch o.Process {
	case InstanceRunning:
		return InstanceStep{State: InstanceRunning, Started: true, Actions: []InstanceAction{ActionCopyAddress}}
	case InstanceStarting:
		return InstanceStep{State: InstanceStarting, Started: o.Started, Actions: []InstanceAction{ActionClearAddress}}
	case "":
		if o.Started {
			return lost(InstanceError)
		}
		return InstanceStep{State: InstanceStopped, Actions: []InstanceAction{ActionClearAddress, ActionCreateInstance}}
	case InstanceStopping, InstanceStopped:
		return lost(o.Process)
	default:
		return InstanceStep{State: InstanceError, Started: o.Started, Actions: []InstanceAction{ActionClearAddress}}
	}
}

func nextInstanceStopped(o InstanceObserved) InstanceStep {
	if o.IM == IMRunning && !o.IMDeleting && o.Process != "" {
		step := InstanceStep{State: o.Process, Actions: []InstanceAction{ActionDeleteInstance}}
		if o.Process != InstanceRunning {
			step.Actions = append(step.Actions, ActionClearAddress)
		}
		return step
	}
	return InstanceStep{State: InstanceStopped, Actions: []InstanceAction{ActionClearAddress}}
}

func orStopped(s InstanceState) InstanceState {
	if s == "" {
		return InstanceStopped
	}
	return s
}
