package backupstore

import (
	"context"
	"io"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"
)

// gaugeDriver counts the block uploads (Write) and downloads (Read) of
// .blk files in flight and keeps the highest count of each; every block
// transfer lasts hold, so that the workers overlap.
type gaugeDriver struct {
	Driver
	hold time.Duration

	mu                  sync.Mutex
	writing, reading    int
	maxWrite, maxRead   int
	blockWrites, blockR int
}

func (g *gaugeDriver) enter(reading bool) func() {
	g.mu.Lock()
	if reading {
		g.reading++
		g.blockR++
		g.maxRead = max(g.maxRead, g.reading)
	} else {
		g.writing++
		g.blockWrites++
		g.maxWrite = max(g.maxWrite, g.writing)
	}
	g.mu.Unlock()
	time.Sleep(g.hold)
	return func() {
		g.mu.Lock()
		if reading {
			g.reading--
		} else {
			g.writing--
		}
		g.mu.Unlock()
	}
}

func (g *gaugeDriver) Write(ctx context.Context, path string, r io.Reader, size int64) error {
	if strings.HasSuffix(path, ".blk") {
		defer g.enter(false)()
	}
	return g.Driver.Write(ctx, path, r, size)
}

func (g *gaugeDriver) Read(ctx context.Context, path string) (io.ReadCloser, error) {
	if strings.HasSuffix(path, ".blk") {
		defer g.enter(true)()
	}
	return g.Driver.Read(ctx, path)
}

func (g *gaugeDriver) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.maxWrite, g.maxRead, g.blockWrites, g.blockR = 0, 0, 0, 0
}

// The concurrent limit of a backup (backup-concurrent-limit) and of a
// restore (restore-concurrent-limit) is the number of blocks in flight to
// and from the store: observed at the driver, never more, and reached when
// there are more blocks than workers.
func TestConcurrentLimitBoundsBlockTransfers(t *testing.T) {
	base := newDirStore(t)
	g := &gaugeDriver{Driver: base.Driver(), hold: 20 * time.Millisecond}
	s := New(g, fastOpts())
	const bs = 2 << 20
	for i, limit := range []int{1, 3, 6} {
		src := newMemSource(16 * bs)
		blocks := make([]int64, 12)
		for k := range blocks {
			blocks[k] = int64(k)
		}
		randomBlocks(rand.New(rand.NewSource(int64(i+1))), src, bs, blocks)
		src.snapshot("s")
		g.reset()
		vol := "vol-" + string(rune('a'+i))
		job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: vol, VolumeSize: src.size, SnapshotName: "s",
			SnapshotCreatedAt: time.Now().UTC().Format(time.RFC3339), Source: src, ConcurrentLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		b, err := job.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.blockWrites != 12 || g.maxWrite != limit {
			t.Fatalf("backup with limit %d: %d block uploads, at most %d at once; want 12 and %d", limit, g.blockWrites, g.maxWrite, limit)
		}
		rj, err := s.PrepareRestore(context.Background(), RestoreRequest{VolumeName: vol, BackupName: b.Name, ConcurrentLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		dst := &memDest{buf: make([]byte, rj.VolumeSize())}
		if err := rj.Run(context.Background(), dst, nil); err != nil {
			t.Fatal(err)
		}
		if g.blockR != 12 || g.maxRead != limit {
			t.Fatalf("restore with limit %d: %d block downloads, at most %d at once; want 12 and %d", limit, g.blockR, g.maxRead, limit)
		}
		t.Logf("limit %d: at most %d uploads and %d downloads at once", limit, g.maxWrite, g.maxRead)
	}
}
