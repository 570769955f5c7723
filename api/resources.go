package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// ---- settings

func (s *Server) listSettings(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListSettingsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	byName := make(map[string]*longhorn.Setting, len(objs))
	for _, o := range objs {
		byName[o.Name] = o
	}
	var out []Setting
	for _, def := range types.SettingDefinitions() {
		out = append(out, u.setting(def, byName[string(def.Name)]))
	}
	return http.StatusOK, u.newCollection("setting", "settings", out), nil
}

// settingDefinition returns the definition of the {name} path value, 404 if
// there is none.
func settingDefinition(r *http.Request) (types.SettingDefinition, error) {
	name := r.PathValue("name")
	def, ok := types.GetSettingDefinition(types.SettingName(name))
	if !ok {
		return def, newError(http.StatusNotFound, CodeNotFound, "setting %q not found", name)
	}
	return def, nil
}

func (s *Server) getSetting(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	def, err := settingDefinition(r)
	if err != nil {
		return 0, nil, err
	}
	obj, err := s.ds.GetSettingRO(ctx, def.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	if apierrors.IsNotFound(err) {
		obj = nil
	}
	return http.StatusOK, u.setting(def, obj), nil
}

// SettingInput is the body of PUT /v1/settings/{name}.
type SettingInput struct {
	Value string `json:"value"`
}

// updateSetting validates the value against the definition (422 naming the
// limit), refuses read-only settings (403), and creates the Setting object
// when it does not exist yet.
func (s *Server) updateSetting(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	def, err := settingDefinition(r)
	if err != nil {
		return 0, nil, err
	}
	var in SettingInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if def.ReadOnly {
		return 0, nil, newError(http.StatusForbidden, CodeForbidden, "setting %s is read-only", def.Name)
	}
	if err := types.ValidateSetting(string(def.Name), in.Value); err != nil {
		return 0, nil, err
	}
	var obj *longhorn.Setting
	err = retry.RetryOnConflict(writeBackoff, func() error {
		cur, err := s.ds.GetSetting(ctx, def.Name)
		switch {
		case apierrors.IsNotFound(err):
			obj, err = s.ds.CreateSetting(ctx, &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: string(def.Name)}, Value: in.Value})
			if apierrors.IsAlreadyExists(err) { // created meanwhile; the cache will show it
				return apierrors.NewConflict(longhorn.Resource("settings"), string(def.Name), err)
			}
		case err == nil:
			cur.Value = in.Value
			obj, err = s.ds.UpdateSetting(ctx, cur)
		}
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.setting(def, obj), nil
}

// ---- nodes

// nodeAddress returns the node's address as Longhorn shows it: the IP of
// its instance manager ("" until one runs).
func (s *Server) nodeAddress(ctx context.Context, node string) string {
	ims, err := s.ds.ListInstanceManagersByNodeRO(ctx, node)
	if err != nil {
		return ""
	}
	for _, im := range ims {
		if im.Status.IP != "" {
			return im.Status.IP
		}
	}
	return ""
}

func (s *Server) listNodes(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListNodesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := make([]Node, 0, len(objs))
	for _, n := range objs {
		out = append(out, u.node(n, s.nodeAddress(ctx, n.Name)))
	}
	sortByID(out, func(n Node) string { return n.ID })
	return http.StatusOK, u.newCollection("node", "nodes", out), nil
}

func (s *Server) getNode(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	n, err := s.ds.GetNodeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.node(n, s.nodeAddress(ctx, n.Name)), nil
}

// NodeInput is the body of PUT /v1/nodes/{name}; absent fields are kept.
type NodeInput struct {
	AllowScheduling           *bool     `json:"allowScheduling"`
	EvictionRequested         *bool     `json:"evictionRequested"`
	Tags                      *[]string `json:"tags"`
	InstanceManagerCPURequest *int      `json:"instanceManagerCPURequest"`
}

func (s *Server) updateNode(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in NodeInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var tags []string
	if in.Tags != nil {
		var err error
		if tags, err = cleanTags("tags", *in.Tags); err != nil {
			return 0, nil, err
		}
	}
	if in.InstanceManagerCPURequest != nil && *in.InstanceManagerCPURequest < 0 {
		return 0, nil, invalidInput("instanceManagerCPURequest", "must be at least 0 (millicpu), got %d", *in.InstanceManagerCPURequest)
	}
	return s.editNode(ctx, u, r.PathValue("name"), func(n *longhorn.Node) {
		if in.AllowScheduling != nil {
			n.Spec.AllowScheduling = *in.AllowScheduling
		}
		if in.EvictionRequested != nil {
			n.Spec.EvictionRequested = *in.EvictionRequested
		}
		if in.Tags != nil {
			n.Spec.Tags = tags
		}
		if in.InstanceManagerCPURequest != nil {
			n.Spec.InstanceManagerCPURequest = *in.InstanceManagerCPURequest
		}
	})
}

// editNode applies edit to a fresh copy of node name and writes it,
// retrying on conflicts; it answers with the node resource.
func (s *Server) editNode(ctx context.Context, u urls, name string, edit func(*longhorn.Node)) (int, any, error) {
	var out *longhorn.Node
	err := retry.RetryOnConflict(writeBackoff, func() error {
		n, err := s.ds.GetNode(ctx, name)
		if err != nil {
			return err
		}
		edit(n)
		out, err = s.ds.UpdateNode(ctx, n)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.node(out, s.nodeAddress(ctx, out.Name)), nil
}

// cleanTags trims, de-duplicates and sorts tags; an empty tag or one with
// spaces or commas is a 422 naming field.
func cleanTags(field string, tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || strings.ContainsAny(t, " ,\t") {
			return nil, invalidInput(field, "tag %q must be non-empty without spaces or commas", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// DiskUpdateInput is the body of the node action diskUpdate: the node's
// complete disk map (disks left out are removed, as in Longhorn).
type DiskUpdateInput struct {
	Disks map[string]longhorn.DiskSpec `json:"disks"`
}

func (s *Server) nodeAction(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	if a := r.URL.Query().Get("action"); a != "diskUpdate" {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidAction, "node action %q is not one of diskUpdate", a)
	}
	var in DiskUpdateInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Disks == nil {
		return 0, nil, invalidInput("disks", "is required (the complete map of the node's disks)")
	}
	for name, d := range in.Disks {
		if d.Path == "" {
			return 0, nil, invalidInput("disks."+name+".path", "is required")
		}
		if d.StorageReserved < 0 {
			return 0, nil, invalidInput("disks."+name+".storageReserved", "must be at least 0 bytes")
		}
		tags, err := cleanTags("disks."+name+".tags", d.Tags)
		if err != nil {
			return 0, nil, err
		}
		d.Tags = tags
		if d.Type == "" {
			d.Type = longhorn.DiskTypeFilesystem
		}
		in.Disks[name] = d
	}
	return s.editNode(ctx, u, r.PathValue("name"), func(n *longhorn.Node) { n.Spec.Disks = in.Disks })
}

// ---- engine images, instance managers, volume attachments (read-only)

func (s *Server) listEngineImages(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListEngineImagesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := make([]EngineImage, 0, len(objs))
	for _, o := range objs {
		out = append(out, u.engineImage(o))
	}
	sortByID(out, func(o EngineImage) string { return o.ID })
	return http.StatusOK, u.newCollection("engineImage", "engineimages", out), nil
}

func (s *Server) getEngineImage(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetEngineImageRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.engineImage(o), nil
}

func (s *Server) listInstanceManagers(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListInstanceManagersRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := make([]InstanceManager, 0, len(objs))
	for _, o := range objs {
		out = append(out, u.instanceManager(o))
	}
	sortByID(out, func(o InstanceManager) string { return o.ID })
	return http.StatusOK, u.newCollection("instanceManager", "instancemanagers", out), nil
}

func (s *Server) getInstanceManager(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetInstanceManagerRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.instanceManager(o), nil
}

func (s *Server) listVolumeAttachments(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListVolumeAttachmentsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := make([]VolumeAttachment, 0, len(objs))
	for _, o := range objs {
		out = append(out, u.volumeAttachment(o))
	}
	sortByID(out, func(o VolumeAttachment) string { return o.ID })
	return http.StatusOK, u.newCollection("volumeAttachment", "volumeattachments", out), nil
}

func (s *Server) getVolumeAttachment(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetVolumeAttachmentRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.volumeAttachment(o), nil
}
