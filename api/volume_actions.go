package api

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// volumeActionFunc runs one action on the volume named in the path.
type volumeActionFunc func(s *Server, ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error)

// volumeAction is one entry of the volume action table: the handler, the
// schema's input and output names, and the input model for /v1/schemas.
type volumeAction struct {
	fn    volumeActionFunc
	def   ActionDef
	input any
}

// Volume action names (POST /v1/volumes/{name}?action=...), Longhorn's.
const (
	ActionAttach             = "attach"
	ActionDetach             = "detach"
	ActionSalvage            = "salvage"
	ActionActivate           = "activate"
	ActionExpand             = "expand"
	ActionCancelExpansion    = "cancelExpansion"
	ActionUpdateReplicaCount = "updateReplicaCount"
	ActionSnapshotCreate     = "snapshotCreate"
	ActionSnapshotList       = "snapshotList"
	ActionSnapshotGet        = "snapshotGet"
	ActionSnapshotDelete     = "snapshotDelete"
	ActionSnapshotRevert     = "snapshotRevert"
	ActionSnapshotPurge      = "snapshotPurge"
)

// volumeActionTable holds every volume action of Longhorn's router; the
// other files of the package add theirs in init.
var volumeActionTable = map[string]volumeAction{
	ActionAttach:             {(*Server).attach, in("attachInput"), AttachInput{}},
	ActionDetach:             {(*Server).detach, in("detachInput"), DetachInput{}},
	ActionSalvage:            {(*Server).salvage, in("salvageInput"), SalvageInput{}},
	ActionActivate:           {(*Server).activate, in("activateInput"), ActivateInput{}},
	ActionExpand:             {(*Server).expand, in("expandInput"), ExpandInput{}},
	ActionCancelExpansion:    {(*Server).cancelExpansion, ActionDef{Output: "volume"}, nil},
	ActionUpdateReplicaCount: {(*Server).updateReplicaCount, in("UpdateReplicaCountInput"), UpdateReplicaCountInput{}},
}

// volumeActionNames lists the table's actions, sorted.
func volumeActionNames() []string {
	names := make([]string, 0, len(volumeActionTable))
	for n := range volumeActionTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// volumeAction dispatches POST /v1/volumes/{name}?action=X. An action the
// volume's state does not offer (see volumeActions) is a 409 naming the
// state; an action whose feature is missing answers 501 in any state.
func (s *Server) volumeAction(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	action := r.URL.Query().Get("action")
	a, ok := volumeActionTable[action]
	if !ok {
		return 0, nil, unknownAction("volume", action, volumeActionNames())
	}
	v, err := s.ds.GetVolumeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	if why, missing := unsupportedVolumeActions[action]; missing {
		return 0, nil, notSupported(why)
	}
	if !slices.Contains(volumeActions(v), action) {
		return 0, nil, invalidState("volume %s is %s (robustness %s): action %s is not available",
			v.Name, orUnknown(string(v.Status.State)), orUnknown(string(v.Status.Robustness)), action)
	}
	return a.fn(s, ctx, r, u, v)
}

// unsupportedVolumeActions are Longhorn volume actions whose feature this
// product does not have yet, with what is missing; they answer 501 and are
// never advertised.
var unsupportedVolumeActions = map[string]string{
	"offlineReplicaRebuilding": "offline replica rebuilding",
	"updateUblkQueueDepth":     "the ublk frontend (v2 data engine)",
	"updateUblkNumberOfQueue":  "the ublk frontend (v2 data engine)",
}

// Actions advertised by state (Longhorn api/model.go toVolumeResource): the
// updates any non-faulted detached or attached volume takes.
var volumeUpdateActions = []string{
	ActionUpdateReplicaCount, "updateDataLocality", "updateAccessMode", "updateReplicaAutoBalance",
	"updateUnmapMarkSnapChainRemoved", "updateSnapshotDataIntegrity", "updateSnapshotMaxCount", "updateSnapshotMaxSize",
	"updateReplicaRebuildingBandwidthLimit", "updateRebuildConcurrentSyncLimit", "updateBackupCompressionMethod",
	"updateReplicaSoftAntiAffinity", "updateReplicaZoneSoftAntiAffinity", "updateReplicaDiskSoftAntiAffinity",
	"updateFreezeFilesystemForSnapshot", "updateOfflineReplicaRebuilding", "updateBackupTargetName",
}

var (
	snapshotCRReads    = []string{"snapshotCRGet", "snapshotCRList"}
	snapshotCRWrites   = []string{"snapshotCRCreate", "snapshotCRDelete"}
	engineSnapActions  = []string{ActionSnapshotPurge, ActionSnapshotCreate, ActionSnapshotList, ActionSnapshotGet, ActionSnapshotDelete, ActionSnapshotRevert, "snapshotBackup"}
	recurringActions   = []string{"recurringJobAdd", "recurringJobList", "recurringJobDelete"}
	kubernetesActions  = []string{"pvCreate", "pvcCreate"}
	replicaRemoveNames = []string{"replicaRemove"}
)

// volumeActions returns the actions valid for a volume in its state, as
// Longhorn advertises them: attach and detach always; a faulted volume
// only salvage; otherwise snapshotCRGet/List, and by state: detached and
// attached take expand, replicaRemove, the update actions and the PV/PVC
// and recurring job actions and snapshotCRCreate/Delete (for a detached
// volume the snapshot controller attaches it) and engineUpgrade (offline
// when detached, live when attached), attached also the engine
// snapshot actions and trimFilesystem, attaching only the recurring job actions. activate needs a
// standby volume, cancelExpansion an expansion in progress; actions whose
// feature is missing (unsupportedVolumeActions) are never listed.
func volumeActions(v *longhorn.Volume) []string {
	actions := []string{ActionAttach, ActionDetach}
	if v.Status.Robustness == longhorn.VolumeRobustnessFaulted {
		return append(actions, ActionSalvage)
	}
	actions = append(actions, snapshotCRReads...)
	switch v.Status.State {
	case longhorn.VolumeStateDetached, longhorn.VolumeStateAttached:
		actions = append(actions, ActionExpand)
		actions = append(actions, replicaRemoveNames...)
		actions = append(actions, volumeUpdateActions...)
		actions = append(actions, kubernetesActions...)
		actions = append(actions, recurringActions...)
		actions = append(actions, snapshotCRWrites...)
		actions = append(actions, "engineUpgrade")
		if v.Status.State == longhorn.VolumeStateAttached {
			actions = append(actions, engineSnapActions...)
			actions = append(actions, ActionTrimFilesystem)
		}
	case longhorn.VolumeStateAttaching:
		actions = append(actions, recurringActions...)
	}
	if v.Spec.Standby && v.Status.State != longhorn.VolumeStateAttaching {
		actions = append(actions, ActionActivate)
	}
	if v.Status.ExpansionRequired {
		actions = append(actions, ActionCancelExpansion)
	}
	return slices.DeleteFunc(actions, func(a string) bool { _, missing := unsupportedVolumeActions[a]; return missing })
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// volumeOK answers with the resource of v read from the caches.
func (s *Server) volumeOK(ctx context.Context, u urls, v *longhorn.Volume) (int, any, error) {
	res, err := s.volumeResource(ctx, u, v)
	return http.StatusOK, res, err
}

// AttachInput is the body of the attach action (Longhorn's AttachInput).
type AttachInput struct {
	HostID          string `json:"hostId"`
	DisableFrontend bool   `json:"disableFrontend"`
	AttachedBy      string `json:"attachedBy"`
	AttacherType    string `json:"attacherType"`
	AttachmentID    string `json:"attachmentID"`
}

// ticketID is "<attacherType>-<attachmentID>" (attachmentID defaults to
// the host), as Longhorn names API tickets.
func ticketID(attacherType, attachmentID, hostID string) string {
	if attachmentID == "" {
		attachmentID = hostID
	}
	return longhorn.GetAttachmentTicketID(longhorn.AttacherType(attacherType), attachmentID)
}

// attach adds (or replaces) an attachment ticket on the volume's
// VolumeAttachment, creating the VolumeAttachment if the volume has none
// yet. The volume controller attaches the volume when the ticket wins.
func (s *Server) attach(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in AttachInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.HostID == "" {
		return 0, nil, invalidInput("hostId", "is required: the node to attach to")
	}
	if _, err := s.ds.GetNodeRO(ctx, in.HostID); apierrors.IsNotFound(err) {
		return 0, nil, invalidInput("hostId", "node %q is not a Longhorn node", in.HostID)
	} else if err != nil {
		return 0, nil, err
	}
	if in.AttacherType == "" {
		in.AttacherType = string(longhorn.AttacherTypeLonghornAPI)
	}
	if longhorn.GetAttacherPriorityLevel(longhorn.AttacherType(in.AttacherType)) == 0 {
		return 0, nil, invalidInput("attacherType", "%q is not a known attacher type", in.AttacherType)
	}
	if v.DeletionTimestamp != nil {
		return 0, nil, invalidState("volume %s is being deleted", v.Name)
	}
	id := ticketID(in.AttacherType, in.AttachmentID, in.HostID)
	ticket := &longhorn.AttachmentTicket{ID: id, Type: longhorn.AttacherType(in.AttacherType), NodeID: in.HostID,
		Parameters: map[string]string{
			longhorn.AttachmentParameterDisableFrontend: strconv.FormatBool(in.DisableFrontend),
			longhorn.AttachmentParameterLastAttachedBy:  in.AttachedBy,
		}}
	err := s.editAttachment(ctx, v.Name, func(va *longhorn.VolumeAttachment) bool {
		if old := va.Spec.AttachmentTickets[id]; old != nil {
			ticket.Generation = old.Generation
		}
		va.Spec.AttachmentTickets[id] = ticket
		return true
	})
	if err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// writeBackoff retries a write whose conflict comes from a cache that has
// not yet seen the previous write (ours or a controller's): up to about 5 s.
var writeBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Cap: time.Second}

// editAttachment applies edit to the volume's VolumeAttachment (created if
// missing) and writes it, retrying on conflicts. edit returns false when
// there is nothing to write.
func (s *Server) editAttachment(ctx context.Context, volume string, edit func(*longhorn.VolumeAttachment) bool) error {
	return retry.RetryOnConflict(writeBackoff, func() error {
		va, err := s.ds.GetVolumeAttachment(ctx, volume)
		exists := err == nil
		if apierrors.IsNotFound(err) {
			va = &longhorn.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: volume},
				Spec: longhorn.VolumeAttachmentSpec{Volume: volume}}
		} else if err != nil {
			return err
		}
		if va.Spec.AttachmentTickets == nil {
			va.Spec.AttachmentTickets = map[string]*longhorn.AttachmentTicket{}
		}
		if !edit(va) {
			return nil
		}
		if !exists {
			_, err = s.ds.CreateVolumeAttachment(ctx, va)
			if apierrors.IsAlreadyExists(err) {
				// The volume controller created it meanwhile: retry as an update.
				return apierrors.NewConflict(longhorn.Resource("volumeattachments"), volume, err)
			}
			return err
		}
		_, err = s.ds.UpdateVolumeAttachment(ctx, va)
		return err
	})
}

// DetachInput is the body of the detach action.
type DetachInput struct {
	AttachmentID string `json:"attachmentID"`
	HostID       string `json:"hostId"`
	ForceDetach  bool   `json:"forceDetach"`
}

// detach removes the API's attachment ticket: the one named by
// attachmentID (see detachMatches), else the longhorn-api ticket of hostId,
// else every longhorn-api ticket; forceDetach removes every ticket of any
// attacher.
func (s *Server) detach(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in DetachInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	err := s.editAttachment(ctx, v.Name, func(va *longhorn.VolumeAttachment) bool {
		before := len(va.Spec.AttachmentTickets)
		for id, t := range va.Spec.AttachmentTickets {
			if detachMatches(in, id, t) {
				delete(va.Spec.AttachmentTickets, id)
			}
		}
		return len(va.Spec.AttachmentTickets) != before
	})
	if err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// detachMatches: attachmentID names a ticket by its id or by the id the
// attach action made of it ("<attacherType>-<attachmentID>", for the
// ticket's own attacher type), as Longhorn's CSI driver detaches with the
// attachmentID it attached with.
func detachMatches(in DetachInput, id string, t *longhorn.AttachmentTicket) bool {
	api := string(longhorn.AttacherTypeLonghornAPI)
	switch {
	case in.ForceDetach:
		return true
	case in.AttachmentID != "":
		return id == in.AttachmentID || id == ticketID(api, in.AttachmentID, "") ||
			(t != nil && id == ticketID(string(t.Type), in.AttachmentID, ""))
	case in.HostID != "":
		return id == ticketID(api, "", in.HostID)
	}
	return t != nil && t.Type == longhorn.AttacherTypeLonghornAPI
}

// SalvageInput is the body of the salvage action: replicas to bring back.
type SalvageInput struct {
	Names []string `json:"names"`
}

// salvage clears the failure of the named replicas of a faulted volume so
// the volume controller can start it from them (Longhorn's SalvageVolume).
// Every name is checked before any replica is written.
func (s *Server) salvage(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in SalvageInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if len(in.Names) == 0 {
		return 0, nil, invalidInput("names", "is required: the replicas to salvage")
	}
	var failed []string
	for _, name := range in.Names {
		rep, err := s.ds.GetReplicaRO(ctx, name)
		if apierrors.IsNotFound(err) || (err == nil && rep.Spec.VolumeName != v.Name) {
			return 0, nil, invalidInput("names", "%q is not a replica of volume %s", name, v.Name)
		} else if err != nil {
			return 0, nil, err
		}
		if rep.Spec.FailedAt != "" {
			failed = append(failed, name)
		}
	}
	for _, name := range failed {
		err := retry.RetryOnConflict(writeBackoff, func() error {
			rep, err := s.ds.GetReplica(ctx, name)
			if err != nil || rep.Spec.FailedAt == "" {
				return err
			}
			rep.Spec.FailedAt = ""
			_, err = s.ds.UpdateReplica(ctx, rep)
			return err
		})
		if err != nil {
			return 0, nil, err
		}
	}
	return s.volumeOK(ctx, u, v)
}

// ActivateInput is the body of the activate action (a standby volume
// becomes a normal one with this frontend).
type ActivateInput struct {
	Frontend string `json:"frontend"`
}

func (s *Server) activate(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in ActivateInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if !v.Spec.Standby {
		return 0, nil, invalidState("volume %s is not a standby volume; only standby (disaster recovery) volumes are activated", v.Name)
	}
	fe := longhorn.VolumeFrontend(in.Frontend)
	if err := oneOf("frontend", fe, longhorn.VolumeFrontendBlockDev, longhorn.VolumeFrontendISCSI, longhorn.VolumeFrontendNBD); err != nil {
		return 0, nil, err
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error {
		sp.Standby, sp.Frontend = false, fe
		return nil
	})
}

// ExpandInput is the body of the expand action.
type ExpandInput struct {
	Size string `json:"size"`
}

func (s *Server) expand(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in ExpandInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	size, err := ParseSize("size", in.Size)
	if err != nil {
		return 0, nil, err
	}
	if size <= v.Spec.Size {
		return 0, nil, invalidInput("size", "must be larger than the current size %d bytes, got %d", v.Spec.Size, size)
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.Size = size; return nil })
}

// cancelExpansion gives up an expansion the engine has not started: the
// volume's size goes back to the engine's current size (Longhorn's
// CancelExpansion). 409 while the engine is expanding.
func (s *Server) cancelExpansion(ctx context.Context, _ *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	engines, err := s.ds.ListEnginesByVolumeRO(ctx, v.Name)
	if err != nil {
		return 0, nil, err
	}
	e := activeEngine(v, engines)
	if e == nil || e.Status.CurrentSize == 0 {
		return 0, nil, invalidState("volume %s has no engine that reports its size; nothing to cancel", v.Name)
	}
	if e.Status.IsExpanding {
		return 0, nil, invalidState("the engine of volume %s is expanding; the expansion cannot be cancelled now", v.Name)
	}
	size := e.Status.CurrentSize
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.Size = size; return nil })
}

// UpdateReplicaCountInput is the body of the updateReplicaCount action.
type UpdateReplicaCountInput struct {
	ReplicaCount int `json:"replicaCount"`
}

func (s *Server) updateReplicaCount(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in UpdateReplicaCountInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if err := checkReplicaCount("replicaCount", in.ReplicaCount); err != nil {
		return 0, nil, err
	}
	if v.Spec.DataLocality == longhorn.DataLocalityStrictLocal && in.ReplicaCount != 1 {
		return 0, nil, invalidInput("replicaCount", "must be 1 for a strict-local volume, got %d", in.ReplicaCount)
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.NumberOfReplicas = in.ReplicaCount; return nil })
}

// updateVolumeSpec applies edit to a fresh copy of the volume and writes it,
// retrying on conflicts; an error from edit is returned and nothing is
// written.
func (s *Server) updateVolumeSpec(ctx context.Context, u urls, name string, edit func(*longhorn.VolumeSpec) error) (int, any, error) {
	return s.updateVolume(ctx, u, name, func(v *longhorn.Volume) error { return edit(&v.Spec) })
}

// updateVolume is updateVolumeSpec for edits that also touch metadata.
func (s *Server) updateVolume(ctx context.Context, u urls, name string, edit func(*longhorn.Volume) error) (int, any, error) {
	var out *longhorn.Volume
	err := retry.RetryOnConflict(writeBackoff, func() error {
		v, err := s.ds.GetVolume(ctx, name)
		if err != nil {
			return err
		}
		if err := edit(v); err != nil {
			return err
		}
		out, err = s.ds.UpdateVolume(ctx, v)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, out)
}
