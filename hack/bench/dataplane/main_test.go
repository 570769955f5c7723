package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFio(t *testing.T) {
	data, err := os.ReadFile("testdata/fio-randread.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseFio(data, true)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{IOPS: 12800.5, BW: 52428800, P50us: 61.44, P99us: 183.296}
	if r.IOPS != want.IOPS || r.BW != want.BW || r.P50us != want.P50us || r.P99us != want.P99us {
		t.Fatalf("parseFio = %+v, want %+v", r, want)
	}
	if _, err := parseFio(data, false); err == nil {
		t.Fatal("write direction of a read-only job: want a no-I/O error")
	}
	if _, err := parseFio([]byte(`{"jobs":[{"error":5}]}`), true); err == nil {
		t.Fatal("fio job error not reported")
	}
}

func TestMedianKeepsErrors(t *testing.T) {
	if m := median([]Result{{IOPS: 3}, {IOPS: 1}, {IOPS: 2}}); m.IOPS != 2 {
		t.Fatalf("median IOPS %v", m.IOPS)
	}
	if m := median([]Result{{IOPS: 3}, {Err: "boom"}, {IOPS: 2}}); m.Err != "boom" {
		t.Fatalf("median hid an error: %+v", m)
	}
}

func TestReportChecksTargets(t *testing.T) {
	js := []Job{jobs[0], jobs[2]} // randread-4k-qd1, randwrite-4k-qd1
	base := &row{Target: Target{Key: "a", Name: "base"}, results: map[string]Result{
		jobs[0].Name: {IOPS: 1000}, jobs[2].Name: {IOPS: 1000}}}
	good := &row{Target: Target{Key: "b", Name: "good", Baseline: "a", MinRead: 0.7, MinWrite: 0.7}, results: map[string]Result{
		jobs[0].Name: {IOPS: 800}, jobs[2].Name: {IOPS: 700}}}
	bad := &row{Target: Target{Key: "c", Name: "bad", Baseline: "a", MinRead: 0.5, MinWrite: 0.3}, results: map[string]Result{
		jobs[0].Name: {IOPS: 400}, jobs[2].Name: {IOPS: 900}}}
	var out bytes.Buffer
	if !report(&out, []*row{base, good, bad}, js) {
		t.Fatalf("report did not flag the miss:\n%s", out.String())
	}
	s := out.String()
	if !strings.Contains(s, "(b) PASS") || !strings.Contains(s, "(c) MISS: randread-4k-qd1 0.40x < 0.50x") {
		t.Fatalf("report:\n%s", s)
	}
	if !strings.Contains(s, "0.80x") {
		t.Fatalf("ratio to baseline missing:\n%s", s)
	}
}

func TestWarm(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "replica"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.img", "replica/volume-head-000.img"} {
		if err := os.WriteFile(filepath.Join(dir, p), make([]byte, 3<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := warm([]string{filepath.Join(dir, "a.img"), filepath.Join(dir, "replica")}); err != nil {
		t.Fatal(err)
	}
	if err := warm(nil); err != nil {
		t.Fatal(err)
	}
	if err := warm([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("a missing path warmed without error")
	}
}
