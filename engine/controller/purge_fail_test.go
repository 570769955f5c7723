package controller_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/controller"
)

// A replica whose snapshot file was truncated (here s2, the child of the
// removed s1) fails its purge (a layer of
// the wrong size is corrupt) and is marked ERR, so it is rebuilt; the other
// replica purges and keeps serving the data.
func TestFailedPurgeMarksTheReplicaERR(t *testing.T) {
	const size = 4 << 20
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, a, b := startVolume(t, size, controller.VolumeOptions{})
	be := c.Backend()
	data := bytes.Repeat([]byte{0x3c}, 1<<20)
	if _, err := be.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := be.WriteAt(data[:4096], 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot(ctx, "s2", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveSnapshots(ctx, []string{"s1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(b.dir, "volume-snap-s2.img"), 64<<10); err != nil {
		t.Fatal(err)
	}
	if err := c.Purge(ctx, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		modes := map[string]controller.Mode{}
		for _, r := range c.Replicas() {
			modes[r.Address] = r.Mode
		}
		if modes[b.addr] == controller.ModeERR && modes[a.addr] == controller.ModeRW {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("modes %v: want %s ERR after its failed purge, %s RW", modes, b.addr, a.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := make([]byte, len(data))
	if _, err := be.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("data after the purge: %v", err)
	}
}
