package api

import (
	"context"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// EngineImage is an engine image resource (Longhorn's api/model.go
// EngineImage: name, image, default and the status fields inline).
type EngineImage struct {
	Resource
	Name    string `json:"name"`
	Image   string `json:"image"`
	Default bool   `json:"default"`
	longhorn.EngineImageStatus
}

func (u urls) engineImage(ei *longhorn.EngineImage, defaultImage string) EngineImage {
	st := ei.Status
	st.Conditions = nonNil(st.Conditions)
	st.NodeDeploymentMap = nonNilMap(st.NodeDeploymentMap)
	return EngineImage{Resource: u.newResource("engineImage", "engineimages", ei.Name),
		Name: ei.Name, Image: ei.Spec.Image, Default: ei.Spec.Image == defaultImage, EngineImageStatus: st}
}

func (s *Server) listEngineImages(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListEngineImagesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := toResources(objs, func(o *longhorn.EngineImage) EngineImage { return u.engineImage(o, s.opts.EngineImage) })
	return http.StatusOK, u.newCollection("engineImage", "engineimages", out), nil
}

func (s *Server) getEngineImage(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetEngineImageRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.engineImage(o, s.opts.EngineImage), nil
}

// createEngineImage is refused: an engine image is the image of this
// product's instance managers, deployed by the managers of that version
// (helm upgrade), never by hand.
func (s *Server) createEngineImage(context.Context, *http.Request, urls) (int, any, error) {
	return 0, nil, notSupported("deploying another engine image (engine upgrade)")
}

// deleteEngineImage deletes an engine image that is neither the default
// (setting default-engine-image or the manager's own) nor used by any
// volume, engine or replica (Longhorn's rule,
// lifecycle.CheckEngineImageDelete), else 409.
func (s *Server) deleteEngineImage(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	ei, err := s.ds.GetEngineImageRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	def, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultEngineImage)
	if err != nil {
		return 0, nil, err
	}
	if err := lifecycle.CheckEngineImageDelete(ei.Spec.Image, ei.Status.RefCount, def, s.opts.EngineImage); err != nil {
		return 0, nil, invalidState("engine image %s: %v", ei.Name, err)
	}
	if err := s.ds.DeleteEngineImage(ctx, ei.Name); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// InstanceManager is an instance manager resource (Longhorn's model: the
// spec type is "managerType" since "type" is the resource type).
type InstanceManager struct {
	Resource
	Name               string                              `json:"name"`
	Image              string                              `json:"image"`
	NodeID             string                              `json:"nodeID"`
	ManagerType        longhorn.InstanceManagerType        `json:"managerType"`
	DataEngine         longhorn.DataEngineType             `json:"dataEngine"`
	CurrentState       longhorn.InstanceManagerState       `json:"currentState"`
	IP                 string                              `json:"ip"`
	InstanceEngines    map[string]longhorn.InstanceProcess `json:"instanceEngines"`
	InstanceReplicas   map[string]longhorn.InstanceProcess `json:"instanceReplicas"`
	Conditions         map[string]longhorn.Condition       `json:"conditions"`
	APIMinVersion      int                                 `json:"apiMinVersion"`
	APIVersion         int                                 `json:"apiVersion"`
	ProxyAPIMinVersion int                                 `json:"proxyApiMinVersion"`
	ProxyAPIVersion    int                                 `json:"proxyApiVersion"`
}

func (u urls) instanceManager(im *longhorn.InstanceManager) InstanceManager {
	st := im.Status
	return InstanceManager{Resource: u.newResource("instanceManager", "instancemanagers", im.Name),
		Name: im.Name, Image: im.Spec.Image, NodeID: im.Spec.NodeID, ManagerType: im.Spec.Type,
		DataEngine: im.Spec.DataEngine, CurrentState: st.CurrentState, IP: st.IP,
		InstanceEngines: nonNilMap(st.InstanceEngines), InstanceReplicas: nonNilMap(st.InstanceReplicas),
		Conditions: conditionMap(st.Conditions), APIMinVersion: st.APIMinVersion, APIVersion: st.APIVersion,
		ProxyAPIMinVersion: st.ProxyAPIMinVersion, ProxyAPIVersion: st.ProxyAPIVersion}
}

func (s *Server) listInstanceManagers(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListInstanceManagersRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("instanceManager", "instancemanagers", toResources(objs, u.instanceManager)), nil
}

func (s *Server) getInstanceManager(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetInstanceManagerRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.instanceManager(o), nil
}

// Attachment is one attachment ticket as Longhorn's API shows it: the
// ticket's spec with its satisfied flag and conditions from the status.
type Attachment struct {
	AttachmentID   string               `json:"attachmentID"`
	AttachmentType string               `json:"attachmentType"`
	NodeID         string               `json:"nodeID"`
	Parameters     map[string]string    `json:"parameters"`
	Satisfied      bool                 `json:"satisfied"`
	Conditions     []longhorn.Condition `json:"conditions"`
}

// VolumeAttachment is a volume attachment resource: the volume and its
// tickets by ID (Longhorn's api/model.go VolumeAttachment).
type VolumeAttachment struct {
	Resource
	Name        string                `json:"name"`
	Volume      string                `json:"volume"`
	Attachments map[string]Attachment `json:"attachments"`
}

// attachments merges the tickets with their statuses; a ticket is
// satisfied only by a status of its current generation.
func attachments(va *longhorn.VolumeAttachment) map[string]Attachment {
	out := map[string]Attachment{}
	if va == nil {
		return out
	}
	for id, t := range va.Spec.AttachmentTickets {
		if t == nil {
			continue
		}
		a := Attachment{AttachmentID: t.ID, AttachmentType: string(t.Type), NodeID: t.NodeID,
			Parameters: nonNilMap(t.Parameters), Conditions: []longhorn.Condition{}}
		if st := va.Status.AttachmentTicketStatuses[id]; st != nil {
			a.Satisfied = longhorn.IsAttachmentTicketSatisfied(t.ID, va)
			a.Conditions = nonNil(st.Conditions)
		}
		out[id] = a
	}
	return out
}

func (u urls) volumeAttachment(va *longhorn.VolumeAttachment) VolumeAttachment {
	return VolumeAttachment{Resource: u.newResource("volumeAttachment", "volumeattachments", va.Name),
		Name: va.Name, Volume: va.Spec.Volume, Attachments: attachments(va)}
}

func (s *Server) listVolumeAttachments(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListVolumeAttachmentsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("volumeAttachment", "volumeattachments", toResources(objs, u.volumeAttachment)), nil
}

func (s *Server) getVolumeAttachment(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetVolumeAttachmentRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.volumeAttachment(o), nil
}

// notSupported is the 501 for a Longhorn route or action whose feature this
// product does not have yet; what names the missing feature.
func notSupported(what string) error {
	return newError(http.StatusNotImplemented, CodeNotSupported, "%s is not supported yet", strings.TrimSpace(what))
}
