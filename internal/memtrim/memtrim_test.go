package memtrim

import (
	"os"
	"strings"
	"testing"
)

const smaps = `00400000-022d1000 r-xp 00000000 fe:00 10461550                           /bin/long horn
Size:              30532 kB
Rss:               18244 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
022d1000-049cd000 r--p 01ed1000 fe:00 10461550                           /bin/long horn
Rss:               22380 kB
Anonymous:             0 kB
049cd000-04a89000 rw-p 045cd000 fe:00 10461550                           /bin/long horn
Rss:                 624 kB
Anonymous:           400 kB
04a89000-04a8a000 r--p 045cd000 fe:00 10461550                           /bin/long horn
Rss:                   4 kB
Anonymous:             4 kB
04a8a000-04a8b000 r--p 045cd000 fe:00 10461550                           /bin/long horn
Rss:                   0 kB
Anonymous:             0 kB
33c3b6c00000-33c3b7400000 rw-p 00000000 00:00 0 
Rss:                4508 kB
Anonymous:          4508 kB
7f2253141000-7f2253297000 r-xp 00026000 fe:00 326269                     /usr/lib/libc.so.6
Rss:                 828 kB
Anonymous:             0 kB
`

func TestParseSmaps(t *testing.T) {
	maps, err := ParseSmaps(strings.NewReader(smaps))
	if err != nil || len(maps) != 7 {
		t.Fatalf("ParseSmaps: %d mappings, %v", len(maps), err)
	}
	m := maps[0]
	if m.Start != 0x400000 || m.End != 0x22d1000 || m.Perms != "r-xp" || m.Path != "/bin/long horn" || m.RssKB != 18244 {
		t.Fatalf("first mapping %+v", m)
	}
	if maps[5].Path != "" || maps[5].AnonKB != 4508 {
		t.Fatalf("anonymous mapping %+v", maps[5])
	}
	got := Trimmable(maps, "/bin/long horn")
	if len(got) != 2 || got[0].Start != 0x400000 || got[1].Start != 0x22d1000 {
		t.Fatalf("Trimmable = %+v, want the text and rodata mappings only", got)
	}
	for _, bad := range []string{"zz-00 r-xp 0 0 0 /x\n", "1000-0 r-xp 0 0 0 /x\n", "garbage line\n"} {
		if _, err := ParseSmaps(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseSmaps(%q): want an error", bad)
		}
	}
}

// TestTrimSelf trims the test binary itself and keeps running: the dropped
// pages come back from the page cache when used.
func TestTrimSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc/self/smaps")
	}
	t.Setenv("LONGHORN_MEMTRIM", "")
	kb, err := Trim()
	if err != nil || kb <= 0 {
		t.Fatalf("Trim() = %d KiB, %v; want the resident executable pages", kb, err)
	}
	t.Setenv("LONGHORN_MEMTRIM", "off")
	if kb, err := Trim(); kb != 0 || err != nil {
		t.Fatalf("Trim() with LONGHORN_MEMTRIM=off = %d, %v", kb, err)
	}
}
