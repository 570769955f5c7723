package procstat

import (
	"os"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Stat{
		"647 (longhorn) S 378 647 378 0 -1":                            {State: "S", PPID: 378},
		"5 (a) b) (c) R 1 5 5 0":                                       {State: "R", PPID: 1},
		"9 (x) Z 2 9 9 0 -1 4194560 0 0 0 0 7 3 0 0 20 0 1 0 4242 0 0": {State: "Z", PPID: 2, StartTime: 4242, UTime: 7, STime: 3},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5 (x", "5 (x) S", "5 (x) S y", "5 (x) S 1 5 5 0 -1 0 0 0 0 0 u 3"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q): want failure", in)
		}
	}
}

func TestReadSelf(t *testing.T) {
	st, err := Read(os.Getpid())
	if err != nil || st.PPID != os.Getppid() || st.StartTime == 0 || !Alive(os.Getpid()) {
		t.Fatalf("Read(self) = %+v, %v", st, err)
	}
	if Alive(1 << 30) {
		t.Fatal("a pid that cannot exist is alive")
	}
}

func TestParseMem(t *testing.T) {
	var m Mem
	ParseStatus("Name:\tlonghorn\nVmHWM:\t   49352 kB\nVmRSS:\t   11604 kB\nRssAnon:\t    7028 kB\n"+
		"RssFile:\t    4576 kB\nRssShmem:\t       0 kB\nThreads:\t7\nSigQ:\t0/95000\n", &m)
	ParseRollup("00400000-7ffc48a9d000 ---p 00000000 00:00 0   [rollup]\nRss:  11604 kB\nPss:   8672 kB\n"+
		"Shared_Clean:  1344 kB\nShared_Dirty:   100 kB\nPrivate_Clean:  12 kB\nPrivate_Dirty:  7736 kB\n", &m)
	want := Mem{RSS: 11604, HWM: 49352, Anon: 7028, File: 4576, Threads: 7, PSS: 8672, PrivateClean: 12, PrivateDirty: 7736, Shared: 1444}
	if m != want || m.Unique() != 7748 {
		t.Fatalf("parsed %+v, want %+v", m, want)
	}
}

func TestReadMemSelf(t *testing.T) {
	m, err := ReadMem(os.Getpid())
	n, ferr := OpenFDs(os.Getpid())
	st, serr := Read(os.Getpid())
	if err != nil || ferr != nil || serr != nil || m.RSS == 0 || m.Threads < 1 || n < 3 || st.UTime+st.STime == 0 && st.StartTime == 0 {
		t.Fatalf("ReadMem(self) = %+v, %v; fds %d, %v; stat %+v, %v", m, err, n, ferr, st, serr)
	}
}
