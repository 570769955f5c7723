package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
)

// restoreResults are the restore measurements, reps pairs of a plain
// download and a full restore taken in turn (medians reported: the shared
// machine's disk and CPU vary a lot from one second to the next).
type restoreResults struct {
	downDiscard, downFile []time.Duration
	full, fullPrepare     []time.Duration
	incr                  time.Duration
}

// restores measures, -restore-reps times in turn: the plain download of
// the plain upload's object into io.Discard and into a file on the
// restore's disk (synced: a restore's bytes end on disk too), and a full
// restore of url1 into a new replica; then the incremental restore of url2
// onto the last one.
func (b *bench) restores(dir, url1, url2 string) (restoreResults, error) {
	var rs restoreResults
	var last *replicaRestore
	defer func() {
		if last != nil {
			last.close()
		}
	}()
	for i := range max(b.o.restoreReps, 1) {
		d, f, err := b.plainDownload(dir)
		if err != nil {
			return rs, err
		}
		rs.downDiscard, rs.downFile = append(rs.downDiscard, d), append(rs.downFile, f)
		if last != nil {
			last.close()
		}
		if last, err = b.newReplicaRestore(filepath.Join(dir, fmt.Sprintf("dst-%d", i))); err != nil {
			return rs, err
		}
		total, prep, err := last.restore(url1)
		if err != nil {
			return rs, err
		}
		rs.full, rs.fullPrepare = append(rs.full, total), append(rs.fullPrepare, prep)
	}
	incr, _, err := last.restore(url2)
	rs.incr = incr
	return rs, err
}

// plainDownload downloads the plain upload's object with minio-go into
// io.Discard (network only) and into a file under dir, synced.
func (b *bench) plainDownload(dir string) (discard, file time.Duration, err error) {
	c, err := b.s3.Client()
	if err != nil {
		return 0, 0, err
	}
	download := func(w io.Writer) (time.Duration, error) {
		start := time.Now()
		obj, err := c.GetObject(context.Background(), b.s3.Bucket, "plain/volume.raw", minio.GetObjectOptions{})
		if err != nil {
			return 0, err
		}
		defer obj.Close()
		n, err := io.Copy(w, obj)
		if err == nil && n != b.o.size {
			err = fmt.Errorf("plain download: %d bytes, want %d", n, b.o.size)
		}
		if f, ok := w.(*os.File); ok && err == nil {
			err = f.Sync()
		}
		return time.Since(start), err
	}
	if discard, err = download(io.Discard); err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	p := filepath.Join(dir, "plain.raw")
	f, err := os.Create(p)
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(p)
	defer f.Close()
	file, err = download(f)
	return discard, file, err
}

// replicaRestore is a new replica and its backup manager (what the sync
// agent runs) to restore into.
type replicaRestore struct {
	b   *bench
	dir string
	srv interface{ Close() error }
	m   *backup.Manager
}

func (b *bench) newReplicaRestore(dir string) (*replicaRestore, error) {
	s, err := newServer(dir, b.o.size)
	if err != nil {
		return nil, err
	}
	return &replicaRestore{b: b, dir: dir, srv: s, m: backup.New(s.BackupReplica(), backup.Options{})}, nil
}

func (r *replicaRestore) close() {
	r.m.Close()
	_ = r.srv.Close()
	_ = os.RemoveAll(r.dir)
}

// restore restores url and returns the whole time and the time Restore
// took to return (opening the target, writing the lock file, loading the
// backup; Longhorn's 2 s lock check wait runs during the block transfer).
func (r *replicaRestore) restore(url string) (total, prepare time.Duration, err error) {
	start := time.Now()
	if err := r.m.Restore(context.Background(), backup.RestoreRequest{BackupURL: url, SnapshotDiskName: "volume-snap-restored.img",
		Credential: r.b.s3.Credential, ConcurrentLimit: r.b.o.concurrency}); err != nil {
		return 0, 0, err
	}
	prepare = time.Since(start)
	for {
		st := r.m.RestoreStatus()
		if !st.IsRestoring {
			if st.Error != "" {
				return 0, 0, fmt.Errorf("restore: %s", st.Error)
			}
			return time.Since(start), prepare, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func (rs restoreResults) report(size, changed int64) {
	dd, df, full, prep := median(rs.downDiscard), median(rs.downFile), median(rs.full), median(rs.fullPrepare)
	pd, pf, data := rate(size, dd), rate(size, df), rate(size, full-prep)
	n := len(rs.full)
	fmt.Printf("| plain download into a file, synced (minio-go GetObject; median of %d) | %.2fs | %.0f | 1.00x |\n", n, df.Seconds(), pf)
	fmt.Printf("| plain download into io.Discard (no disk; median of %d) | %.2fs | %.0f | %.2fx |\n", n, dd.Seconds(), pd, pd/pf)
	fmt.Printf("| full restore (median of %d: %v) | %.2fs | %.0f | **%.2fx** of the plain download into a file (%.2fx of io.Discard) |\n",
		n, rs.full, full.Seconds(), rate(size, full), rate(size, full)/pf, rate(size, full)/pd)
	fmt.Printf("| - its block transfer (with Longhorn's 2 s lock check wait inside), after the %.2fs of open + load | %.2fs | %.0f | **%.2fx** of the plain download into a file |\n",
		prep.Seconds(), (full - prep).Seconds(), data, data/pf)
	fmt.Printf("| incremental restore, 10 %% changed | %.2fs | %.0f of changed data | %.2fx of the full restore's time |\n",
		rs.incr.Seconds(), rate(changed, rs.incr), rs.incr.Seconds()/full.Seconds())
}
