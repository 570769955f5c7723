package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// writerFile is written on the demo filesystem while a replica is killed
// and rebuilt, writerMiB MiB with O_DSYNC (each 1 MiB reaches the volume
// before the next starts), so I/O runs through the failure and the rebuild.
const (
	writerFile = "during-kill.bin"
	writerMiB  = 64
)

type writer struct {
	p     *framework.NodeProcess
	sum   string
	start time.Time
}

// startWriter prepares the source and its checksum on the node, then starts
// dd into the mounted filesystem in the background.
func (d *demo) startWriter(ctx context.Context) (string, error) {
	src := fsDir + "/during-kill.src"
	out, err := d.c.NodeShell(ctx, d.fs.node, fmt.Sprintf("head -c %dM /dev/urandom > %s && sha256sum %s", writerMiB, src, src))
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(out))
	if len(f) < 1 || len(f[0]) != 64 {
		return "", fmt.Errorf("sha256sum printed %q", out)
	}
	log := filepath.Join(d.o.logDir, "longhorn-demo-writer.log")
	p, err := d.c.NodeStart(ctx, d.fs.node, log, "dd", "if="+src, "of="+fsDir+"/mnt/"+writerFile, "bs=1M", "oflag=dsync", "status=none")
	if err != nil {
		return "", err
	}
	d.writer = &writer{p: p, sum: f[0], start: time.Now()}
	time.Sleep(500 * time.Millisecond) // let the first writes reach the engine
	return fmt.Sprintf("writer started: dd %d MiB with oflag=dsync into %s/mnt/%s (pid %d)\n", writerMiB, fsDir, writerFile, p.PID), nil
}

// finishWriter waits for dd and records the file's expected checksum.
func (d *demo) finishWriter(ctx context.Context) (string, error) {
	w := d.writer
	d.writer = nil
	if err := w.p.Wait(3 * time.Minute); err != nil {
		w.p.Stop(time.Second)
		return "", fmt.Errorf("writer (dd into the filesystem during the kill): %w; log in %s", err, d.o.logDir)
	}
	el := time.Since(w.start)
	if _, err := d.c.NodeShell(ctx, d.fs.node, "rm -f "+fsDir+"/during-kill.src"); err != nil {
		return "", err
	}
	d.sums[writerFile] = w.sum
	return fmt.Sprintf("writer finished without an I/O error: %d MiB in %s, through the kill and the rebuild (sha256 %s...)",
		writerMiB, secs(el), w.sum[:16]), nil
}
