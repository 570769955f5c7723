package csi_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCloneReadsSource: a Block volume written through the CSI services
// and snapshotted (type snap), then changed; a volume made from the
// snapshot (dataSource snap://) reads the bytes of the snapshot and one
// made from the volume (dataSource vol://, a new snapshot of it) reads the
// changed bytes. ControllerPublish answers Unavailable until each clone is
// completed.
func TestCloneReadsSource(t *testing.T) {
	n := newNode(t)
	c := dialDriver(t, n, startDriver(t, n))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	params := map[string]string{"numberOfReplicas": "1"}
	src := c.createBlock(t, ctx, "pvc-clone-src", params)
	staging, target := filepath.Join(n.dir, "cl", "staging"), filepath.Join(n.dir, "cl", "dev")
	c.attach(t, ctx, src, staging, target, blockCap(), nil)
	first, second := make([]byte, 4<<20), make([]byte, 4<<20)
	_, _ = rand.Read(first)
	_, _ = rand.Read(second)
	rawIO(t, target, first, 8<<20, true)
	snap, err := c.ctl.CreateSnapshot(ctx, &csipb.CreateSnapshotRequest{Name: "snapshot-for-clone", SourceVolumeId: src,
		Parameters: map[string]string{"type": "snap"}})
	if err != nil || !snap.GetSnapshot().GetReadyToUse() {
		t.Fatalf("CreateSnapshot: %v %v", snap, err)
	}
	rawIO(t, target, second, 8<<20, true)
	c.detach(t, ctx, src, staging, target)

	for _, tc := range []struct {
		name string
		src  *csipb.VolumeContentSource
		want []byte
	}{
		{"pvc-from-snap", &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}, first},
		{"pvc-from-vol", &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: src}}}, second},
	} {
		t0 := time.Now()
		vol, err := c.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: tc.name, Parameters: params,
			VolumeCapabilities: []*csipb.VolumeCapability{blockCap()}, VolumeContentSource: tc.src})
		if err != nil {
			t.Fatalf("CreateVolume %s: %v", tc.name, err)
		}
		id := vol.GetVolume().GetVolumeId()
		t.Cleanup(func() { _, _ = c.ctl.DeleteVolume(context.Background(), &csipb.DeleteVolumeRequest{VolumeId: id}) })
		if vol.GetVolume().GetCapacityBytes() != 64<<20 || vol.GetVolume().GetContentSource() == nil {
			t.Fatalf("%s: %+v, want the source's 64 MiB and its content source", tc.name, vol.GetVolume())
		}
		unavailable := 0
		n.eventually(tc.name+" published once cloned", 3*time.Minute, func() (bool, string) {
			_, err := c.ctl.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{VolumeId: id, NodeId: c.node, VolumeCapability: blockCap()})
			if status.Code(err) == codes.Unavailable {
				unavailable++
			} else if err != nil {
				t.Fatalf("ControllerPublishVolume %s: %v", id, err)
			}
			return err == nil, status.Convert(err).Message()
		})
		v, err := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, id, metav1.GetOptions{})
		n.must(err)
		if cs := v.Status.CloneStatus; cs.State != "completed" || cs.SourceVolume != src {
			t.Fatalf("%s clone status %+v", id, cs)
		}
		c.attach(t, ctx, id, staging, target, blockCap(), nil)
		rawIO(t, target, tc.want, 8<<20, false)
		c.detach(t, ctx, id, staging, target)
		t.Logf("%s (dataSource %s, snapshot %s): cloned and published in %.1fs (%d Unavailable answers first), reads the %d MiB of its source",
			id, v.Spec.DataSource, v.Status.CloneStatus.Snapshot, time.Since(t0).Seconds(), unavailable, len(tc.want)>>20)
	}
}
