package csi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Volume sizes (Longhorn's CSI driver: sizes are rounded up to 2 MiB; at
// least 10 MiB, and 300 MiB for XFS, whose mkfs refuses smaller devices).
const (
	sizeAlign  = 2 << 20
	minSize    = 10 << 20
	minSizeXFS = 300 << 20
	// defaultSize is used when the request gives no capacity range.
	defaultSize = 2 << 30
)

// controllerServer is the Controller service: volumes through the manager's
// REST API (create, delete, attach and detach tickets, expand, capacity).
type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Driver
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// roundSize returns the size to create for a capacity range: required
// bytes (or the default) rounded up to 2 MiB, at least the minimum for the
// file system; OutOfRange when that exceeds the limit.
func roundSize(r *csi.CapacityRange, fsType string) (int64, error) {
	req, lim := int64(0), int64(0)
	if r != nil {
		req, lim = r.GetRequiredBytes(), r.GetLimitBytes()
	}
	if req < 0 || lim < 0 {
		return 0, status.Error(codes.InvalidArgument, "capacity_range: bytes must not be negative")
	}
	size := req
	if size == 0 {
		size = defaultSize
		if lim > 0 && lim < size {
			size = lim
		}
	}
	floor := int64(minSize)
	if fsType == "xfs" {
		floor = minSizeXFS
	}
	size = max(size, floor)
	size = (size + sizeAlign - 1) / sizeAlign * sizeAlign
	if lim > 0 && size > lim {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range: %d bytes (required %d rounded up to %d MiB, at least %d MiB) exceeds limit_bytes %d",
			size, req, sizeAlign>>20, floor>>20, lim)
	}
	return size, nil
}

func (s *controllerServer) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	caps := req.GetVolumeCapabilities()
	if len(caps) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	opts, err := parseParameters(req.GetParameters())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	access, fsType, err := checkCapabilities(caps, opts.fsType)
	if err != nil {
		return nil, err
	}
	size, err := roundSize(req.GetCapacityRange(), fsType)
	if err != nil {
		return nil, err
	}
	if src := req.GetVolumeContentSource(); src != nil {
		ds, fromBackup, srcSize, err := s.contentSource(ctx, src)
		if err != nil {
			return nil, err
		}
		if size, err = cloneSize(req.GetCapacityRange(), size, srcSize); err != nil {
			return nil, err
		}
		opts.create.DataSource = ds
		if fromBackup != "" {
			opts.create.FromBackup = fromBackup
		}
	}
	name := volumeName(req.GetName())
	opts.create.Name, opts.create.Size = name, strconv.FormatInt(size, 10)
	if access == "rwop" {
		opts.create.AccessMode = "rwop"
	}
	v, err := s.d.client.GetVolume(ctx, name)
	switch {
	case err == nil:
		if got, _ := strconv.ParseInt(v.Size, 10, 64); got != size {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with size %d bytes, requested %d", v.Name, got, size)
		}
		if v.DataSource != opts.create.DataSource {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with data source %q, requested %q", v.Name, v.DataSource, opts.create.DataSource)
		}
	case IsNotFound(err):
		if _, err := s.d.client.CreateVolume(ctx, opts.create); err != nil {
			return nil, apiStatus(err, "create volume "+name)
		}
	default:
		return nil, apiStatus(err, "get volume "+name)
	}
	// The API serves reads from a cache: a volume just created may be
	// missing for a moment, so here NotFound means "not yet".
	created := func(v *Volume) bool { return v.State == "detached" || v.State == "attached" }
	if _, err := waitVolumeOpt(ctx, s.d.client, s.d.cfg.Timeout, name, "created", true, created); err != nil {
		return nil, err
	}
	vc := map[string]string{}
	for k, val := range req.GetParameters() {
		vc[k] = val
	}
	vc[paramFsType] = fsType
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: name, CapacityBytes: size, VolumeContext: vc,
		ContentSource: req.GetVolumeContentSource()}}, nil
}

// checkCapabilities validates the requested capabilities the way Longhorn
// does and returns the access mode ("rwo" or "rwop") and file system type.
func checkCapabilities(caps []*csi.VolumeCapability, fsType string) (string, string, error) {
	access := "rwo"
	for _, c := range caps {
		if c.GetBlock() == nil && c.GetMount() == nil {
			return "", "", status.Error(codes.InvalidArgument, "volume_capabilities: access_type block or mount is required")
		}
		if m := c.GetMount(); m != nil && m.GetFsType() != "" {
			if fsType != "" && fsType != m.GetFsType() {
				return "", "", status.Errorf(codes.InvalidArgument, "fsType %q of the StorageClass and %q of the volume capability differ", fsType, m.GetFsType())
			}
			fsType = m.GetFsType()
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER:
			access = "rwop"
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:
		default:
			return "", "", status.Errorf(codes.InvalidArgument,
				"access mode %s: volumes shared between nodes (RWX, ROX) need the share manager, which is not supported yet", c.GetAccessMode().GetMode())
		}
	}
	if fsType == "" {
		fsType = "ext4"
	}
	if fsType != "ext4" && fsType != "xfs" {
		return "", "", status.Errorf(codes.InvalidArgument, "fsType %q: want ext4 or xfs", fsType)
	}
	return access, fsType, nil
}

func (s *controllerServer) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if err := s.d.client.DeleteVolume(ctx, req.GetVolumeId()); err != nil {
		return nil, apiStatus(err, "delete volume "+req.GetVolumeId())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// attachmentID is Longhorn's CSI attachment ticket id suffix:
// csi-<sha256(volume + driver name + node)>.
func attachmentID(volume, driver, node string) string {
	sum := sha256.Sum256([]byte(volume + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

func (s *controllerServer) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	vol, node := req.GetVolumeId(), req.GetNodeId()
	switch {
	case vol == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case node == "":
		return nil, status.Error(codes.InvalidArgument, "node_id is required")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	if _, _, err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}, ""); err != nil {
		return nil, err
	}
	v, err := s.d.client.GetVolume(ctx, vol)
	if err != nil {
		return nil, apiStatus(err, "volume "+vol)
	}
	if err := cloneDone(v); err != nil {
		return nil, err
	}
	if _, err := s.d.client.GetNode(ctx, node); err != nil {
		return nil, apiStatus(err, "node "+node)
	}
	in := map[string]any{"hostId": node, "disableFrontend": false, "attachedBy": s.d.cfg.DriverName,
		"attacherType": "csi-attacher", "attachmentID": attachmentID(vol, s.d.cfg.DriverName, node)}
	if err := s.d.client.VolumeAction(ctx, vol, "attach", in, nil); err != nil {
		return nil, apiStatus(err, "attach volume "+vol+" to "+node)
	}
	_, err = s.waitVolume(ctx, vol, "attached to "+node, func(v *Volume) bool { return endpointOn(v, node) != "" })
	if err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{}, nil
}

// endpointOn is the volume's device path on node when it is attached there
// with its frontend up, else "".
func endpointOn(v *Volume, node string) string {
	if v.State != "attached" || v.CurrentNodeID != node {
		return ""
	}
	for _, c := range v.Controllers {
		if c.HostID == node && c.Endpoint != "" {
			return c.Endpoint
		}
	}
	return ""
}

func (s *controllerServer) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	vol, node := req.GetVolumeId(), req.GetNodeId()
	if vol == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if node == "" {
		return nil, status.Error(codes.InvalidArgument, "node_id is required")
	}
	in := map[string]any{"hostId": node, "attachmentID": attachmentID(vol, s.d.cfg.DriverName, node)}
	err := s.d.client.VolumeAction(ctx, vol, "detach", in, nil)
	if IsNotFound(err) {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	} else if err != nil {
		return nil, apiStatus(err, "detach volume "+vol)
	}
	_, err = s.waitVolume(ctx, vol, "detached from "+node, func(v *Volume) bool {
		return v.CurrentNodeID != node || v.State == "detached"
	})
	if status.Code(err) == codes.NotFound {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (s *controllerServer) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	if _, err := s.d.client.GetVolume(ctx, req.GetVolumeId()); err != nil {
		return nil, apiStatus(err, "volume "+req.GetVolumeId())
	}
	if _, _, err := checkCapabilities(req.GetVolumeCapabilities(), ""); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

func (s *controllerServer) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	vol := req.GetVolumeId()
	if vol == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity_range is required")
	}
	v, err := s.d.client.GetVolume(ctx, vol)
	if err != nil {
		return nil, apiStatus(err, "volume "+vol)
	}
	size, err := roundSize(req.GetCapacityRange(), "")
	if err != nil {
		return nil, err
	}
	cur, _ := strconv.ParseInt(v.Size, 10, 64)
	block := req.GetVolumeCapability().GetBlock() != nil
	if size > cur {
		if err := s.d.client.VolumeAction(ctx, vol, "expand", map[string]string{"size": strconv.FormatInt(size, 10)}, nil); err != nil {
			return nil, apiStatus(err, "expand volume "+vol)
		}
	} else {
		size = cur
	}
	want := strconv.FormatInt(size, 10)
	_, err = s.waitVolume(ctx, vol, "expanded to "+want, func(v *Volume) bool {
		if v.Size != want {
			return false
		}
		for _, c := range v.Controllers {
			if c.IsExpanding || (v.State == "attached" && c.Size != want) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: !block}, nil
}

// GetCapacity is what the node named by the topology (or, without one, the
// node with the most) can still place: the sum over its schedulable disks
// of available minus reserved bytes.
func (s *controllerServer) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	nodes, err := s.d.client.ListNodes(ctx)
	if err != nil {
		return nil, apiStatus(err, "list nodes")
	}
	want := req.GetAccessibleTopology().GetSegments()[topologyHostname]
	best := int64(0)
	for _, n := range nodes {
		if want != "" && n.Name != want {
			continue
		}
		best = max(best, nodeCapacity(n))
	}
	return &csi.GetCapacityResponse{AvailableCapacity: best}, nil
}

func nodeCapacity(n Node) int64 {
	if !n.AllowScheduling {
		return 0
	}
	var sum int64
	for _, d := range n.Disks {
		if d.AllowScheduling {
			sum += max(0, d.StorageAvailable-d.StorageReserved)
		}
	}
	return sum
}

// waitVolume polls the volume every 250 ms until cond holds, the context
// ends or the driver's timeout passes (DeadlineExceeded, so the sidecar
// retries). A volume that disappears is NotFound.
func (s *controllerServer) waitVolume(ctx context.Context, name, what string, cond func(*Volume) bool) (*Volume, error) {
	return waitVolume(ctx, s.d.client, s.d.cfg.Timeout, name, what, cond)
}

func waitVolume(ctx context.Context, c *Client, timeout time.Duration, name, what string, cond func(*Volume) bool) (*Volume, error) {
	return waitVolumeOpt(ctx, c, timeout, name, what, false, cond)
}

func waitVolumeOpt(ctx context.Context, c *Client, timeout time.Duration, name, what string, missingOK bool, cond func(*Volume) bool) (*Volume, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *Volume
	for {
		v, err := c.GetVolume(ctx, name)
		if IsNotFound(err) && !missingOK {
			return nil, status.Errorf(codes.NotFound, "volume %s not found", name)
		}
		if err == nil {
			last = v
			if cond(v) {
				return v, nil
			}
		}
		select {
		case <-ctx.Done():
			state := "unknown"
			if last != nil {
				state = fmt.Sprintf("state %s, robustness %s, node %q", last.State, last.Robustness, last.CurrentNodeID)
			}
			return nil, status.Errorf(codes.DeadlineExceeded, "volume %s not %s within %s (%s)", name, what, timeout, state)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// apiStatus maps an API error to a gRPC status: 404 NotFound, other 4xx
// InvalidArgument (with the API's message naming the field), the rest
// Internal.
func apiStatus(err error, what string) error {
	switch {
	case IsNotFound(err):
		return status.Errorf(codes.NotFound, "%s: not found", what)
	case IsInvalid(err):
		return status.Errorf(codes.InvalidArgument, "%s: %v", what, err)
	default:
		return status.Errorf(codes.Internal, "%s: %v", what, err)
	}
}
