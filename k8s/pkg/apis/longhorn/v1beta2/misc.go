package v1beta2

// ConditionStatus is the status of a Condition: True, False or Unknown.
type ConditionStatus string

// Condition statuses (Longhorn misc.go).
const (
	ConditionStatusTrue    ConditionStatus = "True"
	ConditionStatusFalse   ConditionStatus = "False"
	ConditionStatusUnknown ConditionStatus = "Unknown"
)

// Condition is Longhorn's condition shape, shared by most kinds. It differs
// from metav1.Condition: timestamps are RFC 3339 strings, there is a
// lastProbeTime and no observedGeneration. Kept as Longhorn has it so existing
// objects and tools read the same fields.
type Condition struct {
	// Type is the type of the condition, e.g. VolumeConditionTypeScheduled.
	// +optional
	Type string `json:"type"`
	// Status is the status of the condition: True, False or Unknown.
	// +optional
	Status ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked (RFC 3339).
	// +optional
	LastProbeTime string `json:"lastProbeTime"`
	// LastTransitionTime is when Status last changed (RFC 3339).
	// +optional
	LastTransitionTime string `json:"lastTransitionTime"`
	// Reason is a one-word CamelCase cause of the last transition.
	// +optional
	Reason string `json:"reason"`
	// Message is a human-readable account of the last transition.
	// +optional
	Message string `json:"message"`
}

// DataEngineType selects the data path of a volume or instance: v1 is the
// replicated engine/replica process pair; v2 is Longhorn's SPDK engine (the
// API accepts it; this project implements v1).
type DataEngineType string

// Data engine types.
const (
	DataEngineTypeV1 DataEngineType = "v1"
	DataEngineTypeV2 DataEngineType = "v2"
	// DataEngineTypeAll is used by settings and engine images that apply to
	// every data engine; never valid on a volume.
	DataEngineTypeAll DataEngineType = "all"
)

// Generic string values used in Longhorn parameters ("true", "false", "any").
const (
	TrueValue  = "true"
	FalseValue = "false"
	AnyValue   = "any"
)

// GetCondition returns the condition of type condType from conds, or a
// zero Condition with that type and status Unknown when there is none.
// conds is not changed.
func GetCondition(conds []Condition, condType string) Condition {
	for _, c := range conds {
		if c.Type == condType {
			return c
		}
	}
	return Condition{Type: condType, Status: ConditionStatusUnknown}
}

// SetCondition returns conds with the condition of type condType set to
// status, reason and message. now (RFC 3339) becomes LastProbeTime, and also
// LastTransitionTime when the status changed or the condition is new. The
// input slice may be reused; pass a copy when it belongs to a cache object.
func SetCondition(conds []Condition, condType string, status ConditionStatus, reason, message, now string) []Condition {
	for i := range conds {
		if conds[i].Type != condType {
			continue
		}
		if conds[i].Status != status {
			conds[i].LastTransitionTime = now
		}
		conds[i].Status = status
		conds[i].Reason = reason
		conds[i].Message = message
		conds[i].LastProbeTime = now
		return conds
	}
	return append(conds, Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		LastProbeTime:      now,
		LastTransitionTime: now,
	})
}
