package csi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"
)

// Topology keys of NodeGetInfo (Longhorn's node_server.go).
const (
	topologyHostname = "kubernetes.io/hostname"
	topologyZone     = "topology.kubernetes.io/zone"
	topologyRegion   = "topology.kubernetes.io/region"
)

// nodeServer is the Node service: stage (format if empty, check, mount),
// publish (bind mounts), stats and online file system growth.
type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Driver
	m Mounter
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (s *nodeServer) NodeGetInfo(ctx context.Context, _ *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	seg := map[string]string{topologyHostname: s.d.cfg.NodeID}
	if n, err := s.d.client.GetNode(ctx, s.d.cfg.NodeID); err == nil {
		if n.Zone != "" {
			seg[topologyZone] = n.Zone
		}
		if n.Region != "" {
			seg[topologyRegion] = n.Region
		}
	}
	return &csi.NodeGetInfoResponse{NodeId: s.d.cfg.NodeID, AccessibleTopology: &csi.Topology{Segments: seg}}, nil
}

// device returns the volume's device on this node: the endpoint of its
// engine here (/dev/longhorn/<volume>). FailedPrecondition when the volume
// is not attached to this node.
func (s *nodeServer) device(ctx context.Context, volume string) (string, *Volume, error) {
	v, err := s.d.client.GetVolume(ctx, volume)
	if err != nil {
		return "", nil, apiStatus(err, "volume "+volume)
	}
	dev := endpointOn(v, s.d.cfg.NodeID)
	if dev == "" {
		return "", v, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s (state %s, node %q)",
			volume, s.d.cfg.NodeID, v.State, v.CurrentNodeID)
	}
	if !strings.HasPrefix(dev, "/") {
		return "", v, status.Errorf(codes.FailedPrecondition, "volume %s has frontend endpoint %q, not a block device; use frontend blockdev", volume, dev)
	}
	return dev, v, nil
}

func (s *nodeServer) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	vol, staging, cap := req.GetVolumeId(), req.GetStagingTargetPath(), req.GetVolumeCapability()
	switch {
	case vol == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case staging == "":
		return nil, status.Error(codes.InvalidArgument, "staging_target_path is required")
	case cap == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	if _, _, err := checkCapabilities([]*csi.VolumeCapability{cap}, ""); err != nil {
		return nil, err
	}
	dev, v, err := s.device(ctx, vol)
	if err != nil {
		return nil, err
	}
	if err := waitDeviceSize(ctx, dev, v.Size); err != nil {
		return nil, err
	}
	if cap.GetBlock() != nil {
		return &csi.NodeStageVolumeResponse{}, nil // a raw device is published directly
	}
	if mounted, err := s.m.IsMountPoint(staging); err == nil && mounted {
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "staging path %s: %v", staging, err)
	}
	fsType := cap.GetMount().GetFsType()
	if fsType == "" {
		fsType = req.GetVolumeContext()[paramFsType]
	}
	if fsType == "" {
		fsType = "ext4"
	}
	if err := s.formatOrCheck(ctx, dev, fsType, req.GetVolumeContext()[paramMkfsParams]); err != nil {
		return nil, err
	}
	if err := s.m.Mount(dev, staging, fsType, cap.GetMount().GetMountFlags()); err != nil {
		return nil, status.Errorf(codes.Internal, "mount %s at %s: %v", dev, staging, err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// waitDeviceSize waits up to 30 s for dev to reach the volume's size: a
// volume expanded while detached grows after its engine started, and a
// file system made or checked before that would need a second, online,
// growth.
func waitDeviceSize(ctx context.Context, dev, volumeSize string) error {
	want, err := strconv.ParseInt(volumeSize, 10, 64)
	if err != nil {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := deviceSize(dev)
		if err == nil && got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return status.Errorf(codes.Unavailable, "device %s has %d bytes, the volume %d: its expansion has not finished", dev, got, want)
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// formatOrCheck formats dev only when DiskFormat reports it empty, else
// checks it: a device that cannot be probed is never formatted.
func (s *nodeServer) formatOrCheck(ctx context.Context, dev, fsType, mkfsParams string) error {
	existing, err := s.m.DiskFormat(ctx, dev)
	if err != nil {
		return status.Errorf(codes.Unavailable, "not formatting or mounting %s: %v", dev, err)
	}
	switch {
	case existing == "":
		s.d.log.WithFields(map[string]any{"device": dev, "fsType": fsType, "mkfsParams": mkfsParams}).Info("csi: device is empty, formatting")
		if err := s.m.Format(ctx, fsType, dev, strings.Fields(mkfsParams)); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
	case existing != fsType:
		return status.Errorf(codes.FailedPrecondition, "device %s holds %s, the volume asks for %s: not mounting it", dev, existing, fsType)
	default:
		if err := s.m.Check(ctx, fsType, dev); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if err := s.m.GrowOffline(ctx, fsType, dev); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
	}
	return nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "staging_target_path is required")
	}
	if err := mount.CleanupMountPoint(req.GetStagingTargetPath(), s.m, true); err != nil {
		return nil, status.Errorf(codes.Internal, "unmount %s: %v", req.GetStagingTargetPath(), err)
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	vol, target, cap := req.GetVolumeId(), req.GetTargetPath(), req.GetVolumeCapability()
	switch {
	case vol == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	case cap == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	case req.GetStagingTargetPath() == "":
		return nil, status.Error(codes.FailedPrecondition, "staging_target_path is required (the volume is staged first)")
	}
	if _, _, err := checkCapabilities([]*csi.VolumeCapability{cap}, ""); err != nil {
		return nil, err
	}
	if mounted, err := s.m.IsMountPoint(target); err == nil && mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	opts := []string{"bind"}
	if req.GetReadonly() {
		opts = append(opts, "ro")
	}
	source := req.GetStagingTargetPath()
	if cap.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		if err := s.singleWriter(ctx, vol, source, target, cap.GetBlock() != nil); err != nil {
			return nil, err
		}
	}
	if cap.GetBlock() != nil {
		dev, _, err := s.device(ctx, vol)
		if err != nil {
			return nil, err
		}
		source = dev
		if err := makeFile(target); err != nil {
			return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
		}
	} else {
		if mounted, err := s.m.IsMountPoint(source); err != nil || !mounted {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", vol, source)
		}
		if err := os.MkdirAll(target, 0o750); err != nil {
			return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
		}
		opts = append(opts, cap.GetMount().GetMountFlags()...)
	}
	if err := s.m.Mount(source, target, "", opts); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s at %s: %v", source, target, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// singleWriter refuses a second publication of a SINGLE_NODE_SINGLE_WRITER
// (RWOP) volume: any mount of its staged file system or device other than
// the staging path itself and target.
func (s *nodeServer) singleWriter(ctx context.Context, vol, staging, target string, block bool) error {
	src := staging
	if block {
		dev, _, err := s.device(ctx, vol)
		if err != nil {
			return err
		}
		src = dev
	}
	refs, err := s.m.GetMountRefs(src)
	if err != nil {
		return nil // not mounted anywhere yet
	}
	for _, r := range refs {
		if r != target && r != staging {
			return status.Errorf(codes.FailedPrecondition, "volume %s has access mode SINGLE_NODE_SINGLE_WRITER and is already published at %s", vol, r)
		}
	}
	return nil
}

func makeFile(p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	}
	if err := mount.CleanupMountPoint(req.GetTargetPath(), s.m, true); err != nil {
		return nil, status.Errorf(codes.Internal, "unmount %s: %v", req.GetTargetPath(), err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if req.GetVolumeId() == "" || req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id and volume_path are required")
	}
	v, err := s.d.client.GetVolume(ctx, req.GetVolumeId())
	if err != nil {
		return nil, apiStatus(err, "volume "+req.GetVolumeId())
	}
	var st unix.Stat_t
	if err := unix.Stat(req.GetVolumePath(), &st); errors.Is(err, unix.ENOENT) {
		return nil, status.Errorf(codes.NotFound, "volume path %s does not exist", req.GetVolumePath())
	} else if err != nil {
		return nil, status.Errorf(codes.Internal, "stat %s: %v", req.GetVolumePath(), err)
	}
	if v.Robustness == "faulted" {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is faulted", v.Name)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		size, err := deviceSize(req.GetVolumePath())
		if err != nil {
			return nil, status.Errorf(codes.Internal, "size of %s: %v", req.GetVolumePath(), err)
		}
		return &csi.NodeGetVolumeStatsResponse{
			Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: size}}}, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(req.GetVolumePath(), &fs); err != nil {
		return nil, status.Errorf(codes.Internal, "statfs %s: %v", req.GetVolumePath(), err)
	}
	bs := int64(fs.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(fs.Blocks) * bs, Available: int64(fs.Bavail) * bs, Used: int64(fs.Blocks-fs.Bfree) * bs},
		{Unit: csi.VolumeUsage_INODES, Total: int64(fs.Files), Available: int64(fs.Ffree), Used: int64(fs.Files - fs.Ffree)},
	}}, nil
}

func (s *nodeServer) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if req.GetVolumeId() == "" || req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id and volume_path are required")
	}
	dev, _, err := s.device(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(req.GetVolumePath()); os.IsNotExist(err) {
		return nil, status.Errorf(codes.NotFound, "volume path %s does not exist", req.GetVolumePath())
	}
	size, err := deviceSize(dev)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "size of %s: %v", dev, err)
	}
	if want := req.GetCapacityRange().GetRequiredBytes(); want > size {
		return nil, status.Errorf(codes.Unavailable, "device %s has %d bytes, %d requested: the engine has not grown it yet", dev, size, want)
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
	}
	if need, err := s.m.NeedResize(dev, req.GetVolumePath()); err == nil && !need {
		return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
	}
	if fs, _ := s.m.DiskFormat(ctx, dev); fs == "ext4" && !HasCapSysResource() {
		return nil, status.Errorf(codes.FailedPrecondition, "growing the mounted ext4 file system on %s needs CAP_SYS_RESOURCE, "+
			"which the plugin lacks; it grows when the volume is next staged", dev)
	}
	if err := s.m.Resize(dev, req.GetVolumePath()); err != nil {
		return nil, status.Errorf(codes.Internal, "grow the file system on %s at %s: %v", dev, req.GetVolumePath(), err)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}
