package csi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/csi"
)

// startDriver serves the driver (all three services) for node n1 on a
// socket in the test's directory.
func startDriver(t *testing.T, n *node) string {
	t.Helper()
	sock := filepath.Join(n.dir, "csi.sock")
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	d, err := csi.New(csi.Config{Endpoint: "unix://" + sock, NodeID: n.name, ManagerURL: n.managerURL(),
		Node: true, Controller: true, Version: "test", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("driver: %v", err)
		}
	})
	n.eventually("driver socket", 10*time.Second, func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})
	return "unix://" + sock
}

// TestSanity runs csi-sanity (github.com/kubernetes-csi/csi-test/v5) against
// the driver and a real manager, clones from a volume and from a snapshot
// included. Specs skipped by csi-sanity itself are the capabilities the
// driver does not advertise (README: "CSI"): ListVolumes, ListSnapshots,
// volume conditions.
func TestSanity(t *testing.T) {
	n := newNode(t)
	cfg := sanity.NewTestConfig()
	cfg.Address = startDriver(t, n)
	cfg.TargetPath = filepath.Join(n.dir, "sanity", "target")
	cfg.StagingPath = filepath.Join(n.dir, "sanity", "staging")
	cfg.TestVolumeSize = 64 << 20
	cfg.TestVolumeExpandSize = 128 << 20
	cfg.TestVolumeParameters = map[string]string{"numberOfReplicas": "1"}
	cfg.IDGen = &sanity.DefaultIDGenerator{}
	// CSI snapshots of type snap (Longhorn snapshots); a detached volume is
	// attached by the manager's snapshot controller for them.
	cfg.TestSnapshotParameters = map[string]string{"type": "snap"}
	if err := os.MkdirAll(filepath.Join(n.dir, "sanity"), 0o755); err != nil {
		t.Fatal(err)
	}
	sanity.Test(t, cfg)
}
