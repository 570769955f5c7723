// Command backup is the backup benchmark (make bench-backup): backup and
// restore throughput of a volume to a local S3 server (versitygw), full and
// after 10 % of the blocks changed, as MiB/s and as a ratio to a plain
// upload (and download) of the same bytes to the same server with minio-go,
// measured in the same run.
//
// The volume is a real replica store (engine/replica) holding random data;
// backups and restores run through the replica's backup manager
// (engine/syncagent/backup, what the sync agent runs), restores into a
// second replica. Nothing here is timed in a unit test.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/replicasrv"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
	"github.com/longhorn-go/longhorn/testbed/backuptarget"
)

const mib = 1 << 20

type options struct {
	size        int64
	dir         string
	versitygw   string
	concurrency int
	compression string
	rounds      int
	restoreReps int
}

func main() {
	var o options
	flag.Int64Var(&o.size, "size", 1<<30, "volume size in bytes (a multiple of 2 MiB)")
	flag.StringVar(&o.dir, "dir", "", "work directory (default: a temporary one, removed afterwards)")
	flag.StringVar(&o.versitygw, "versitygw", "", "versitygw binary (default: $LONGHORN_VERSITYGW or the test bed cache)")
	flag.IntVar(&o.concurrency, "concurrency", 2, "backup-concurrent-limit / restore-concurrent-limit")
	flag.StringVar(&o.compression, "compression", backupstore.CompressionLZ4, "backup compression method")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds")
	flag.IntVar(&o.restoreReps, "restore-reps", 3, "plain download and full restore pairs per round (medians reported)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	logrus.SetLevel(logrus.WarnLevel)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-backup:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(o options) error {
	if o.size <= 0 || o.size%(2*mib) != 0 {
		return fmt.Errorf("-size %d: want a positive multiple of 2 MiB", o.size)
	}
	if o.versitygw == "" {
		o.versitygw = backuptarget.FindVersitygw()
	}
	if o.versitygw == "" {
		return fmt.Errorf("versitygw not found: run make testbin-backup")
	}
	if o.dir == "" {
		d, err := os.MkdirTemp("", "bench-backup-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	for r := 1; r <= o.rounds; r++ {
		fmt.Printf("== round %d/%d: %d MiB volume, random data, %s, concurrency %d\n", r, o.rounds, o.size/mib, o.compression, o.concurrency)
		if err := round(o, filepath.Join(o.dir, fmt.Sprintf("round-%d", r))); err != nil {
			return err
		}
	}
	return nil
}

// bench is one round's servers and volumes.
type bench struct {
	o      options
	s3     *backuptarget.S3
	src    *replicasrv.Server
	srcMgr *backup.Manager
}

func newServer(dir string, size int64) (*replicasrv.Server, error) {
	s, err := replicasrv.NewServer(dir, size, replica.Options{}, "bench", nil)
	if err != nil {
		return nil, err
	}
	if _, err := s.ReplicaOpen(context.Background(), &enginerpc.ReplicaOpenRequest{}); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func round(o options, dir string) error {
	s3, err := backuptarget.StartS3Server(o.versitygw, filepath.Join(dir, "s3"), "bench")
	if err != nil {
		return err
	}
	defer s3.Stop()
	src, err := newServer(filepath.Join(dir, "src"), o.size)
	if err != nil {
		return err
	}
	defer src.Close()
	b := &bench{o: o, s3: s3, src: src, srcMgr: backup.New(src.BackupReplica(), backup.Options{})}
	defer b.srcMgr.Close()
	if err := fill(src.Store(), 0, o.size); err != nil {
		return err
	}
	if err := src.Store().Snapshot("snap-1", true, "", nil); err != nil {
		return err
	}
	plainUp, err := b.plainUpload()
	if err != nil {
		return err
	}
	full, url1, err := b.backup("snap-1")
	if err != nil {
		return err
	}
	// 10 % of the blocks change (every 10th block, wholly rewritten)
	changed := int64(0)
	for off := int64(0); off < o.size; off += 20 * mib {
		if err := fill(src.Store(), off, 2*mib); err != nil {
			return err
		}
		changed += 2 * mib
	}
	if err := src.Store().Snapshot("snap-2", true, "", nil); err != nil {
		return err
	}
	incr, url2, err := b.backup("snap-2")
	if err != nil {
		return err
	}
	rs, err := b.restores(filepath.Join(dir, "restore"), url1, url2)
	if err != nil {
		return err
	}
	report(o.size, changed, plainUp, full, incr, rs)
	return nil
}

// fill writes random data into [off, off+n) of the store.
func fill(st *replica.Store, off, n int64) error {
	buf := make([]byte, 4*mib)
	for end := off + n; off < end; off += int64(len(buf)) {
		p := buf[:min(int64(len(buf)), end-off)]
		if _, err := rand.Read(p); err != nil {
			return err
		}
		if _, err := st.WriteAt(p, off); err != nil {
			return err
		}
	}
	return st.Flush()
}

// snapshotFile returns the snap-1 layer file (the volume's bytes).
func (b *bench) snapshotFile() (string, error) {
	return b.src.BackupReplica().FilePath("volume-snap-snap-1.img")
}

func (b *bench) plainUpload() (time.Duration, error) {
	p, err := b.snapshotFile()
	if err != nil {
		return 0, err
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	c, err := b.s3.Client()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	_, err = c.PutObject(context.Background(), b.s3.Bucket, "plain/volume.raw", f, b.o.size,
		minio.PutObjectOptions{ContentType: "application/octet-stream", NumThreads: uint(b.o.concurrency), PartSize: 16 * mib})
	return time.Since(start), err
}

type result struct {
	d        time.Duration
	uploaded int64
}

func (b *bench) backup(snap string) (result, string, error) {
	start := time.Now()
	res, err := b.srcMgr.Create(context.Background(), backup.CreateRequest{SnapshotName: snap, BackupTarget: b.s3.URL,
		VolumeName: "bench-vol", Credential: b.s3.Credential, CompressionMethod: b.o.compression, ConcurrentLimit: b.o.concurrency})
	if err != nil {
		return result{}, "", err
	}
	for {
		st, _ := b.srcMgr.Status(res.BackupName)
		if st.State == backup.StateComplete {
			d := time.Since(start)
			store, err := backupstore.Open(context.Background(), b.s3.URL, b.s3.Credential, backupstore.Options{})
			if err != nil {
				return result{}, "", err
			}
			info, err := store.InspectBackup(context.Background(), "bench-vol", res.BackupName)
			if err != nil {
				return result{}, "", err
			}
			return result{d: d, uploaded: info.NewlyUploadedDataSize + info.ReUploadedDataSize}, st.BackupURL, nil
		}
		if st.State == backup.StateError {
			return result{}, "", fmt.Errorf("backup of %s: %s", snap, st.Error)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func rate(n int64, d time.Duration) float64 { return float64(n) / mib / d.Seconds() }

func report(size, changed int64, up time.Duration, full, incr result, rs restoreResults) {
	pu := rate(size, up)
	fmt.Printf("| step | time | MiB/s | ratio |\n|---|---|---|---|\n")
	fmt.Printf("| plain upload (minio-go PutObject, %d MiB) | %.2fs | %.0f | 1.00x |\n", size/mib, up.Seconds(), pu)
	fmt.Printf("| full backup (%d MiB uploaded) | %.2fs | %.0f | **%.2fx** of plain upload |\n",
		full.uploaded/mib, full.d.Seconds(), rate(size, full.d), rate(size, full.d)/pu)
	fmt.Printf("| incremental backup, 10 %% changed (%d MiB uploaded) | %.2fs | %.0f of changed data | %.2fx of the full backup's time (changed share %.2f) |\n",
		incr.uploaded/mib, incr.d.Seconds(), rate(changed, incr.d), incr.d.Seconds()/full.d.Seconds(), float64(changed)/float64(size))
	rs.report(size, changed)
}
