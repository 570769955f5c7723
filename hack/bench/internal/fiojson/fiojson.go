// Package fiojson reads the report of a single-job fio run
// (`fio --output-format=json`, fio's HOWTO "JSON output"), as the
// benchmarks in hack/bench use it.
package fiojson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Dir is one direction (read or write) of the job: IOPS, bytes per second,
// bytes moved and the completion-latency percentiles in nanoseconds keyed
// as fio writes them ("50.000000", "99.000000").
type Dir struct {
	IOPS    float64 `json:"iops"`
	BWBytes float64 `json:"bw_bytes"`
	IOBytes float64 `json:"io_bytes"`
	Clat    struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

// P50us is the median completion latency in µs (fio --percentile_list=50:99).
func (d Dir) P50us() float64 { return d.Clat.Percentile["50.000000"] / 1000 }

// P99us is the 99th percentile completion latency in µs.
func (d Dir) P99us() float64 { return d.Clat.Percentile["99.000000"] / 1000 }

// Parse returns the read (read true) or write side of the report's one
// job. Text before the JSON (an interrupted fio writes "fio: terminating on
// signal 2" first) is skipped. Errors: bad JSON, not exactly one job, the
// job's error code, a side that did no I/O.
func Parse(data []byte, read bool) (Dir, error) {
	var out struct {
		Jobs []struct {
			Error int `json:"error"`
			Read  Dir `json:"read"`
			Write Dir `json:"write"`
		} `json:"jobs"`
	}
	if i := bytes.IndexByte(data, '{'); i > 0 {
		data = data[i:]
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return Dir{}, fmt.Errorf("fio json: %w", err)
	}
	if len(out.Jobs) != 1 {
		return Dir{}, fmt.Errorf("fio json: %d jobs, want 1", len(out.Jobs))
	}
	j := out.Jobs[0]
	if j.Error != 0 {
		return Dir{}, fmt.Errorf("fio job error %d", j.Error)
	}
	d := j.Write
	if read {
		d = j.Read
	}
	if d.IOPS == 0 || (d.IOBytes == 0 && d.BWBytes == 0) {
		return Dir{}, errors.New("fio job did no I/O")
	}
	return d, nil
}
