package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// AttacherType names who asked for an attachment.
type AttacherType string

// Attacher types.
const (
	AttacherTypeCSIAttacher                      AttacherType = "csi-attacher"
	AttacherTypeLonghornAPI                      AttacherType = "longhorn-api"
	AttacherTypeSnapshotController               AttacherType = "snapshot-controller"
	AttacherTypeBackupController                 AttacherType = "backup-controller"
	AttacherTypeVolumeCloneController            AttacherType = "volume-clone-controller"
	AttacherTypeSalvageController                AttacherType = "salvage-controller"
	AttacherTypeShareManagerController           AttacherType = "share-manager-controller"
	AttacherTypeVolumeRestoreController          AttacherType = "volume-restore-controller"
	AttacherTypeVolumeEvictionController         AttacherType = "volume-eviction-controller"
	AttacherTypeVolumeExpansionController        AttacherType = "volume-expansion-controller"
	AttacherTypeBackingImageDataSourceController AttacherType = "bim-ds-controller"
	AttacherTypeVolumeRebuildingController       AttacherType = "volume-rebuilding-controller"
	AttacherTypeRecurringJobApp                  AttacherType = "recurring-job-app"
)

// Attacher priority levels: among the tickets with the highest priority the
// lexicographically smallest ID wins.
const (
	AttacherPriorityLevelVolumeRestoreController          = 2000
	AttacherPriorityLevelVolumeExpansionController        = 2000
	AttacherPriorityLevelLonghornAPI                      = 1000
	AttacherPriorityLevelCSIAttacher                      = 900
	AttacherPriorityLevelSalvageController                = 900
	AttacherPriorityLevelShareManagerController           = 900
	AttacherPriorityLevelSnapshotController               = 800
	AttacherPriorityLevelBackupController                 = 800
	AttacherPriorityLevelVolumeCloneController            = 800
	AttacherPriorityLevelVolumeEvictionController         = 800
	AttacherPriorityLevelBackingImageDataSourceController = 800
	AttacherPriorityLevelVolumeRebuildingController       = 800
)

// Attachment ticket parameters and status condition.
const (
	AttachmentParameterDisableFrontend = "disableFrontend"
	AttachmentParameterLastAttachedBy  = "lastAttachedBy"

	AttachmentStatusConditionTypeSatisfied                            = "Satisfied"
	AttachmentStatusConditionReasonAttachedWithIncompatibleParameters = "AttachedWithIncompatibleParameters"
)

// maxAttachmentTicketIDLength is the longest ticket ID (a Kubernetes name).
const maxAttachmentTicketIDLength = 253

// attacherPriority maps each attacher type to its priority level.
var attacherPriority = map[AttacherType]int{
	AttacherTypeVolumeRestoreController:          AttacherPriorityLevelVolumeRestoreController,
	AttacherTypeVolumeExpansionController:        AttacherPriorityLevelVolumeExpansionController,
	AttacherTypeLonghornAPI:                      AttacherPriorityLevelLonghornAPI,
	AttacherTypeCSIAttacher:                      AttacherPriorityLevelCSIAttacher,
	AttacherTypeSalvageController:                AttacherPriorityLevelSalvageController,
	AttacherTypeShareManagerController:           AttacherPriorityLevelShareManagerController,
	AttacherTypeSnapshotController:               AttacherPriorityLevelSnapshotController,
	AttacherTypeBackupController:                 AttacherPriorityLevelBackupController,
	AttacherTypeVolumeCloneController:            AttacherPriorityLevelVolumeCloneController,
	AttacherTypeVolumeEvictionController:         AttacherPriorityLevelVolumeEvictionController,
	AttacherTypeBackingImageDataSourceController: AttacherPriorityLevelBackingImageDataSourceController,
	AttacherTypeVolumeRebuildingController:       AttacherPriorityLevelVolumeRebuildingController,
}

// GetAttacherPriorityLevel returns the priority of an attacher type; unknown
// types (and recurring-job-app) get 0.
func GetAttacherPriorityLevel(t AttacherType) int {
	return attacherPriority[t]
}

// GetAttachmentTicketID returns "<attacherType>-<id>", cut to 253 bytes.
func GetAttachmentTicketID(attacherType AttacherType, id string) string {
	ticketID := string(attacherType) + "-" + id
	if len(ticketID) > maxAttachmentTicketIDLength {
		return ticketID[:maxAttachmentTicketIDLength]
	}
	return ticketID
}

// IsAttachmentTicketSatisfied reports whether ticket id exists in va's spec
// and its status is satisfied for the same generation. va may be nil.
func IsAttachmentTicketSatisfied(id string, va *VolumeAttachment) bool {
	if va == nil {
		return false
	}
	ticket, ok := va.Spec.AttachmentTickets[id]
	if !ok || ticket == nil {
		return false
	}
	st, ok := va.Status.AttachmentTicketStatuses[id]
	if !ok || st == nil {
		return false
	}
	return ticket.Generation == st.Generation && st.Satisfied
}

// AttachmentTicket is one request to attach the volume.
type AttachmentTicket struct {
	// ID is unique among the volume's tickets: "<attacherType>-<id>".
	// +optional
	ID string `json:"id"`
	// +optional
	Type AttacherType `json:"type"`
	// NodeID is the node the requester wants the volume attached to.
	// +optional
	NodeID string `json:"nodeID"`
	// Parameters: disableFrontend ("true", "false", "any"), lastAttachedBy.
	// +optional
	Parameters map[string]string `json:"parameters"`
	// Generation increases when the ticket changes; set by the system.
	// +optional
	Generation int64 `json:"generation"`
}

// AttachmentTicketStatus is the state of one ticket.
type AttachmentTicketStatus struct {
	// +optional
	ID string `json:"id"`
	// Satisfied is true when the volume is attached as the ticket asks.
	Satisfied bool `json:"satisfied"`
	// Conditions record errors met while satisfying the ticket.
	// +nullable
	Conditions []Condition `json:"conditions"`
	// Generation is the ticket generation this status is for.
	// +optional
	Generation int64 `json:"generation"`
}

// VolumeAttachmentSpec is the desired state: the attachment tickets.
type VolumeAttachmentSpec struct {
	// AttachmentTickets maps ticket ID to ticket.
	// +optional
	AttachmentTickets map[string]*AttachmentTicket `json:"attachmentTickets"`
	// Volume is the Longhorn volume these tickets are for.
	Volume string `json:"volume"`
}

// VolumeAttachmentStatus is the state of each ticket.
type VolumeAttachmentStatus struct {
	// +optional
	AttachmentTicketStatuses map[string]*AttachmentTicketStatus `json:"attachmentTicketStatuses"`
}

// VolumeAttachment holds the attachment tickets of one volume (same name as the volume).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhva
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeAttachment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VolumeAttachmentSpec   `json:"spec,omitempty"`
	Status VolumeAttachmentStatus `json:"status,omitempty"`
}

// VolumeAttachmentList is a list of VolumeAttachments.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type VolumeAttachmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VolumeAttachment `json:"items"`
}
