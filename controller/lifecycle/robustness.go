package lifecycle

// Robustness is Volume status.robustness.
type Robustness string

// Robustness values (Longhorn's VolumeRobustness).
const (
	RobustnessHealthy  Robustness = "healthy"
	RobustnessDegraded Robustness = "degraded"
	RobustnessFaulted  Robustness = "faulted"
	RobustnessUnknown  Robustness = "unknown"
)

// RobustnessObserved is what robustness is computed from.
type RobustnessObserved struct {
	State VolumeState
	// Engine is the engine's current state.
	Engine InstanceState
	// HealthyRW counts replicas the engine lists as RW whose process runs.
	HealthyRW int
	// Usable counts replicas that have not failed (spec.failedAt unset) and
	// have been healthy at least once or are new; Total counts all replicas
	// (the volume controller passes 0 while no replica was ever healthy).
	Usable int
	Total  int
	// Want is spec.numberOfReplicas.
	Want int
}

// RobustnessAction is a side effect of a robustness change.
type RobustnessAction string

// Robustness actions.
const (
	// ActionRecordDegraded sets status.lastDegradedAt = now (entering
	// degraded), which starts the replica-replenishment-wait-interval.
	ActionRecordDegraded RobustnessAction = "record-degraded"
	// ActionClearDegraded empties status.lastDegradedAt (back to healthy).
	ActionClearDegraded RobustnessAction = "clear-degraded"
	// ActionEventFaulted emits a Warning event: all replicas failed.
	ActionEventFaulted RobustnessAction = "event-faulted"
	// ActionConsiderSalvage asks the volume controller to apply auto-salvage
	// (when the auto-salvage setting is on).
	ActionConsiderSalvage RobustnessAction = "consider-salvage"
)

// NextRobustness computes the volume's robustness and the side effects of a
// change (Longhorn's volume controller: robustness is derived, never
// stored as intent). Table:
//
//	volume / engine                         replicas               -> robustness
//	attached, engine unknown                any                    -> unknown
//	attached (engine running)               HealthyRW == 0, Total == 0 -> unknown
//	attached (engine running)               HealthyRW == 0         -> faulted
//	attached (engine running)               HealthyRW <  Want      -> degraded
//	attached (engine running)               HealthyRW >= Want      -> healthy
//	not attached                            Total > 0, Usable == 0 -> faulted
//	not attached                            otherwise              -> unknown
//
// Actions on change: entering degraded -> record-degraded; degraded ->
// healthy -> clear-degraded; entering faulted -> event-faulted and
// consider-salvage (consider-salvage repeats while faulted, so a salvage
// blocked once is retried).
func NextRobustness(cur Robustness, o RobustnessObserved) (Robustness, []RobustnessAction) {
	next := robustnessOf(o)
	var acts []RobustnessAction
	switch {
	case next == RobustnessDegraded && cur != RobustnessDegraded:
		acts = append(acts, ActionRecordDegraded)
	case next == RobustnessHealthy && cur == RobustnessDegraded:
		acts = append(acts, ActionClearDegraded)
	case next == RobustnessFaulted:
		if cur != RobustnessFaulted {
			acts = append(acts, ActionEventFaulted)
		}
		acts = append(acts, ActionConsiderSalvage)
	}
	return next, acts
}

func robustnessOf(o RobustnessObserved) Robustness {
	if o.State != VolumeAttached {
		if o.Total > 0 && o.Usable == 0 {
			return RobustnessFaulted
		}
		return RobustnessUnknown
	}
	switch {
	case o.Engine == InstanceUnknown:
		return RobustnessUnknown
	case o.HealthyRW == 0 && o.Total == 0:
		// First attach: the engine has not reported its replicas yet and
		// none ever held data, so nothing failed (no Faulted event).
		return RobustnessUnknown
	case o.HealthyRW == 0:
		return RobustnessFaulted
	case o.HealthyRW < o.Want:
		return RobustnessDegraded
	}
	return RobustnessHealthy
}
