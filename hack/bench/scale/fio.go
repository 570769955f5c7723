package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/longhorn-go/longhorn/hack/bench/internal/fiojson"
)

// FioResult is what one fio job measured (the write or read side).
type FioResult struct {
	IOPS  float64 `json:"iops"`
	MiBps float64 `json:"mib_per_s"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
}

// parseFio reads a single-job fio JSON report; read selects the direction.
func parseFio(data []byte, read bool) (FioResult, error) {
	d, err := fiojson.Parse(data, read)
	if err != nil {
		return FioResult{}, err
	}
	return FioResult{IOPS: d.IOPS, MiBps: d.BWBytes / (1 << 20), P50us: d.P50us(), P99us: d.P99us()}, nil
}

// runFio runs fio with args (job options; output options are added) and
// parses its report; name names the output file in dir.
func runFio(ctx context.Context, dir, name string, read bool, timeout time.Duration, args ...string) (FioResult, error) {
	out := filepath.Join(dir, "fio-"+name+".json")
	args = append([]string{"--name=" + name, "--numjobs=1", "--percentile_list=50:99", "--output-format=json", "--output=" + out}, args...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if b, err := exec.CommandContext(ctx, "fio", args...).CombinedOutput(); err != nil {
		return FioResult{}, fmt.Errorf("fio %s: %w: %s", name, err, tail(b))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return FioResult{}, err
	}
	return parseFio(data, read)
}

// nbdArgs are fio's options for the NBD engine on uri.
func nbdArgs(uri string) []string { return []string{"--ioengine=nbd", "--uri=" + uri} }

// timed are the options of a time-based job of d after ramp.
func timed(d, ramp time.Duration) []string {
	return []string{"--time_based", "--runtime=" + secs(d), "--ramp_time=" + secs(ramp)}
}

// randWrite4k are the options of a 4 KiB random write job at depth qd over
// size bytes.
func randWrite4k(qd int, size int64) []string {
	return []string{"--rw=randwrite", "--bs=4k", "--iodepth=" + strconv.Itoa(qd), "--size=" + strconv.FormatInt(size, 10),
		"--norandommap", "--randrepeat=0"}
}

func secs(d time.Duration) string { return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))) }

func tail(b []byte) string {
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(b)
}
