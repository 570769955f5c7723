package csi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/csi"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// csiClients are the three services of the driver under test.
type csiClients struct {
	node    string // the node the driver serves
	ctl     csipb.ControllerClient
	nodeSvc csipb.NodeClient
}

func dialDriver(t *testing.T, n *node, addr string) csiClients {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return csiClients{node: n.name, ctl: csipb.NewControllerClient(conn), nodeSvc: csipb.NewNodeClient(conn)}
}

func mountCap(fs string) *csipb.VolumeCapability {
	return &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: fs}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}

func blockCap() *csipb.VolumeCapability {
	return &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}

// attach publishes and stages volume id on n1 and publishes it at target,
// as kubelet and the attacher do for a pod.
func (c csiClients) attach(t *testing.T, ctx context.Context, id, staging, target string, vc *csipb.VolumeCapability, volCtx map[string]string) {
	t.Helper()
	if _, err := c.ctl.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{VolumeId: id, NodeId: c.node, VolumeCapability: vc}); err != nil {
		t.Fatalf("ControllerPublishVolume: %v", err)
	}
	if _, err := c.nodeSvc.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: vc, VolumeContext: volCtx}); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if _, err := c.nodeSvc.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: vc, VolumeContext: volCtx}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
}

func (c csiClients) detach(t *testing.T, ctx context.Context, id, staging, target string) {
	t.Helper()
	if _, err := c.nodeSvc.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	if _, err := c.nodeSvc.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatalf("NodeUnstageVolume: %v", err)
	}
	if _, err := c.ctl.ControllerUnpublishVolume(ctx, &csipb.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: c.node}); err != nil {
		t.Fatalf("ControllerUnpublishVolume: %v", err)
	}
}

// TestFilesystemVolumes: for ext4 and xfs, a volume made through the CSI
// services holds a data set across detach and reattach (stage never
// formats a volume that has a file system), and grows online: the
// file system in the published path is larger after ControllerExpand and
// NodeExpand, and the data set is intact.
func TestFilesystemVolumes(t *testing.T) {
	n := newNode(t)
	c := dialDriver(t, n, startDriver(t, n))
	for _, fs := range []string{"ext4", "xfs"} {
		t.Run(fs, func(t *testing.T) {
			testutil.RequireTool(t, "mkfs."+fs)
			filesystemScenario(t, n, c, fs)
		})
	}
}

func filesystemScenario(t *testing.T, n *node, c csiClients, fs string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	params := map[string]string{"numberOfReplicas": "1", "fsType": fs, "staleReplicaTimeout": "30", "fromBackup": ""}
	vol, err := c.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "pvc-" + fs + "-scenario", Parameters: params,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 320 << 20}, VolumeCapabilities: []*csipb.VolumeCapability{mountCap(fs)}})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	id, vc, volCtx := vol.GetVolume().GetVolumeId(), mountCap(fs), vol.GetVolume().GetVolumeContext()
	defer func() {
		if _, err := c.ctl.DeleteVolume(context.Background(), &csipb.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	}()
	staging, target := filepath.Join(n.dir, fs, "staging"), filepath.Join(n.dir, fs, "target")
	c.attach(t, ctx, id, staging, target, vc, volCtx)
	data := make([]byte, 16<<20)
	_, _ = rand.Read(data)
	want := sha256.Sum256(data)
	if err := os.WriteFile(filepath.Join(target, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	c.detach(t, ctx, id, staging, target)

	c.attach(t, ctx, id, staging, target, vc, volCtx)
	defer c.detach(t, context.Background(), id, staging, target)
	checkData(t, filepath.Join(target, "data.bin"), want)
	before := fsSize(t, target)
	exp, err := c.ctl.ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{VolumeId: id,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 640 << 20}, VolumeCapability: vc})
	if err != nil || !exp.GetNodeExpansionRequired() {
		t.Fatalf("ControllerExpandVolume: %v %v", exp, err)
	}
	_, err = c.nodeSvc.NodeExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target,
		StagingTargetPath: staging, CapacityRange: &csipb.CapacityRange{RequiredBytes: 640 << 20}, VolumeCapability: vc})
	if fs == "ext4" && !csi.HasCapSysResource() {
		// This sandbox withholds CAP_SYS_RESOURCE, which the ext4 online
		// resize ioctl needs: the refusal says so, and the file system
		// grows offline at the next stage.
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("NodeExpandVolume without CAP_SYS_RESOURCE: %v, want FailedPrecondition", err)
		}
		t.Log("no CAP_SYS_RESOURCE here: ext4 grows offline at the next stage")
		c.detach(t, ctx, id, staging, target)
		c.attach(t, ctx, id, staging, target, vc, volCtx)
	} else if err != nil {
		t.Fatalf("NodeExpandVolume: %v", err)
	}
	if after := fsSize(t, target); after < before+250<<20 {
		t.Fatalf("file system %d bytes after the expansion, %d before", after, before)
	}
	checkData(t, filepath.Join(target, "data.bin"), want)
}

func checkData(t *testing.T, path string, want [32]byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || sha256.Sum256(got) != want {
		t.Fatalf("%s: data set differs (%v)", path, err)
	}
}

func fsSize(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * int64(st.Bsize)
}

// TestBlockVolume: a volumeMode Block volume is published as a device file
// at the target path, written and read raw, and keeps its bytes across a
// detach and reattach.
func TestBlockVolume(t *testing.T) {
	n := newNode(t)
	c := dialDriver(t, n, startDriver(t, n))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vol, err := c.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "pvc-block-scenario", Parameters: map[string]string{"numberOfReplicas": "1"},
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 64 << 20}, VolumeCapabilities: []*csipb.VolumeCapability{blockCap()}})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	id := vol.GetVolume().GetVolumeId()
	staging, target := filepath.Join(n.dir, "block", "staging"), filepath.Join(n.dir, "block", "dev")
	c.attach(t, ctx, id, staging, target, blockCap(), nil)
	p := make([]byte, 4<<20)
	_, _ = rand.Read(p)
	rawIO(t, target, p, 8<<20, true)
	c.detach(t, ctx, id, staging, target)
	c.attach(t, ctx, id, staging, target, blockCap(), nil)
	rawIO(t, target, p, 8<<20, false)
	if replicaDirs(t, n, id) == 0 {
		t.Fatal("no replica directory of the volume on the node's disk")
	}
	c.detach(t, ctx, id, staging, target)

	// Deleting the volume (what the provisioner does for a deleted PVC with
	// reclaimPolicy Delete) removes the Longhorn volume and its replica data.
	if _, err := c.ctl.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	n.eventually("volume and replica data gone", 60*time.Second, func() (bool, string) {
		_, err := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, id, metav1.GetOptions{})
		left := replicaDirs(t, n, id)
		return apierrors.IsNotFound(err) && left == 0, fmt.Sprintf("volume: %v, %d replica directories", err, left)
	})
}

// replicaDirs counts the replica directories of volume on n's disk
// (<disk>/replicas/<volume>-<suffix>, Longhorn's layout).
func replicaDirs(t *testing.T, n *node, volume string) int {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(n.dir, "disk", "replicas"))
	count := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), volume+"-") {
			count++
		}
	}
	return count
}

// rawIO writes p at off through the published device (when write) and
// checks that it reads back, with O_DIRECT.
func rawIO(t *testing.T, dev string, p []byte, off int64, write bool) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, len(p), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	if write {
		copy(buf, p)
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatalf("write %s: %v", dev, err)
		}
		clear(buf)
	}
	if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, p) {
		t.Fatalf("read %s at %d: the bytes differ (%v)", dev, off, err)
	}
}
