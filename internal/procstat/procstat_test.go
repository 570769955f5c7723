package procstat

import (
	"os"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Stat{
		"647 (longhorn) S 378 647 378 0 -1":                            {State: "S", PPID: 378},
		"5 (a) b) (c) R 1 5 5 0":                                       {State: "R", PPID: 1},
		"9 (x) Z 2 9 9 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0": {State: "Z", PPID: 2, StartTime: 4242},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5 (x", "5 (x) S", "5 (x) S y"} {
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
