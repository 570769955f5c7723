package syncagent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// TestHashLaterRecordsMirrors: the sender's background hash of a file it
// copied locally records the same checksum for the receiver's file when
// that has not changed since the copy, and for no other file.
func TestHashLaterRecordsMirrors(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "src")
	for _, d := range []string{dir, filepath.Join(base, "dst"), filepath.Join(base, "changed")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := bytes.Repeat([]byte("longhorn"), 64<<10)
	src := filepath.Join(dir, "volume-snap-m.img")
	same := filepath.Join(base, "dst", "volume-snap-m.img")
	changed := filepath.Join(base, "changed", "volume-snap-m.img")
	notSnap := filepath.Join(base, "dst", "volume-head-001.img")
	var ms []mirror
	for _, p := range []string{src, same, changed, notSnap} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ct, err := ChangeTime(p)
		if err != nil {
			t.Fatal(err)
		}
		if p != src {
			ms = append(ms, mirror{path: p, changeTime: ct})
		}
	}
	time.Sleep(10 * time.Millisecond) // a later change time for the rewrite
	if err := os.WriteFile(changed, bytes.Repeat([]byte("x"), len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(devNull{})
	a := NewAgent(dirReplica{dir}, Config{HashLockPath: filepath.Join(base, "lock", "hash"), Log: log})
	defer a.Close()
	a.hashLater(src, ms...)

	deadline := time.Now().Add(10 * time.Second)
	var want RecordedMetadata
	for {
		var err error
		if want, _, err = CurrentRecorded(src); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source was not hashed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.Close() // waits for the hash goroutine
	got, _, err := CurrentRecorded(same)
	if err != nil || got.Checksum != want.Checksum || got.Method != HashMethod {
		t.Fatalf("mirror record %+v, %v; want checksum %s", got, err, want.Checksum)
	}
	for _, p := range []string{changed, notSnap} {
		if _, _, err := ReadRecorded(p); !os.IsNotExist(err) {
			t.Fatalf("%s: recorded (%v), want no record", p, err)
		}
	}
	// A current record is kept as it is.
	keep := RecordedMetadata{Method: HashMethod, Checksum: "0123456789abcdef", ChangeTime: got.ChangeTime}
	if err := WriteRecorded(same, keep); err != nil {
		t.Fatal(err)
	}
	if err := recordMirror(mirror{path: same, changeTime: got.ChangeTime}, want.Checksum); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := CurrentRecorded(same); r.Checksum != keep.Checksum {
		t.Fatalf("a current record was replaced: %+v", r)
	}
	left, _ := filepath.Glob(filepath.Join(base, "*", "*.tmp*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
