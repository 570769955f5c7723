package process

// State is the lifecycle state of a managed process, as Longhorn's process
// manager reports it (ProcessStatus.state).
type State string

// Process states.
const (
	// StateStarting: the OS process runs but its ports do not all accept connections yet.
	StateStarting State = "starting"
	// StateRunning: every port named in the port args accepts TCP connections.
	StateRunning State = "running"
	// StateStopping: a stop was asked (delete, replace, shutdown); waiting for the exit.
	StateStopping State = "stopping"
	// StateStopped: the process exited after a stop was asked.
	StateStopped State = "stopped"
	// StateError: the process exited without being asked to; ErrorMsg says how.
	StateError State = "error"
)

// Event is something that happened to a process.
type Event int

// Events of the process state machine.
const (
	// EventReady: the health checker found every port accepting connections.
	EventReady Event = iota
	// EventStop: someone asked the process to stop.
	EventStop
	// EventExit: the OS process exited.
	EventExit
)

func (e Event) String() string {
	switch e {
	case EventReady:
		return "ready"
	case EventStop:
		return "stop"
	case EventExit:
		return "exit"
	}
	return "unknown"
}

// Next is the process state machine. It returns the state after ev; a
// transition not in the table leaves the state unchanged.
//
//	from \ event   ready     stop      exit
//	starting       running   stopping  error
//	running        running   stopping  error
//	stopping       stopping  stopping  stopped
//	stopped        stopped   stopped   stopped
//	error          error     stopped   error
//
// An exit nobody asked for (from starting or running) is an error; stopping a
// process that already failed needs no signal and goes straight to stopped.
func Next(s State, ev Event) State {
	switch ev {
	case EventReady:
		if s == StateStarting {
			return StateRunning
		}
	case EventStop:
		switch s {
		case StateStarting, StateRunning:
			return StateStopping
		case StateError:
			return StateStopped
		}
	case EventExit:
		switch s {
		case StateStarting, StateRunning:
			return StateError
		case StateStopping:
			return StateStopped
		}
	}
	return s
}

// Exited reports whether no OS process stands behind state s any more.
func (s State) Exited() bool { return s == StateStopped || s == StateError }
