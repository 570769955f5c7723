package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// FioResult is what one fio job measured (the write or read side).
type FioResult struct {
	IOPS  float64 `json:"iops"`
	MiBps float64 `json:"mib_per_s"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
}

// fioDir is one direction of a job in `fio --output-format=json`.
type fioDir struct {
	IOPS    float64 `json:"iops"`
	BWBytes float64 `json:"bw_bytes"`
	IOBytes float64 `json:"io_bytes"`
	Clat    struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

// parseFio reads a single-job fio JSON report; read selects the direction.
func parseFio(data []byte, read bool) (FioResult, error) {
	var out struct {
		Jobs []struct {
			Error int    `json:"error"`
			Read  fioDir `json:"read"`
			Write fioDir `json:"write"`
		} `json:"jobs"`
	}
	// An interrupted fio writes "fio: terminating on signal 2" first.
	if i := bytes.IndexByte(data, '{'); i > 0 {
		data = data[i:]
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return FioResult{}, fmt.Errorf("fio json: %w", err)
	}
	if len(out.Jobs) != 1 {
		return FioResult{}, fmt.Errorf("fio json: %d jobs, want 1", len(out.Jobs))
	}
	j := out.Jobs[0]
	if j.Error != 0 {
		return FioResult{}, fmt.Errorf("fio job error %d", j.Error)
	}
	d := j.Write
	if read {
		d = j.Read
	}
	if d.IOBytes == 0 {
		return FioResult{}, fmt.Errorf("fio job did no I/O")
	}
	return FioResult{IOPS: d.IOPS, MiBps: d.BWBytes / (1 << 20),
		P50us: d.Clat.Percentile["50.000000"] / 1000, P99us: d.Clat.Percentile["99.000000"] / 1000}, nil
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
