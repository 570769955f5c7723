package monitor

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MountInfoFile is where the kernel lists the mounts of this process's
// mount namespace (proc(5), /proc/pid/mountinfo).
const MountInfoFile = "/proc/self/mountinfo"

// Mount is one line of mountinfo: the mount point and whether it propagates
// mounts to peers (an optional field "shared:N").
type Mount struct {
	MountPoint string
	Shared     bool
}

// ParseMountInfo reads mountinfo lines ("36 35 98:0 /mnt1 /mnt2 rw,noatime
// master:1 shared:2 - ext3 /dev/root rw", proc(5)): field 5 is the mount
// point (octal escapes such as \040 decoded), then optional fields up to
// "-". A line with fewer than 7 fields or without the "-" separator is an
// error naming the line number.
func ParseMountInfo(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 {
			return nil, fmt.Errorf("mountinfo line %d: want at least 7 fields and a \"-\" separator: %q", n, sc.Text())
		}
		m := Mount{MountPoint: unescapeOctal(f[4])}
		for _, opt := range f[6:sep] {
			if strings.HasPrefix(opt, "shared:") {
				m.Shared = true
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeOctal decodes mountinfo's \ooo escapes (space, tab, newline,
// backslash).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range 3 {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return s[0] <= '3'
}

// MountOf returns the mount that holds path: the one whose mount point is
// the longest prefix of path (the last one listed wins for equal mount
// points, as later mounts cover earlier ones). ok is false when none does.
func MountOf(mounts []Mount, path string) (Mount, bool) {
	path = filepath.Clean(path)
	var best Mount
	found := false
	for _, m := range mounts {
		mp := filepath.Clean(m.MountPoint)
		if path == mp || mp == "/" || strings.HasPrefix(path, mp+"/") {
			if !found || len(mp) >= len(filepath.Clean(best.MountPoint)) {
				best, found = m, true
			}
		}
	}
	return best, found
}

// MountPropagation reports whether the filesystem holding path propagates
// mounts (Longhorn's MountPropagation node condition): symlinks in path are
// resolved, then the holding mount in MountInfoFile must be "shared".
func MountPropagation(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	f, err := os.Open(MountInfoFile)
	if err != nil {
		return false, err
	}
	defer f.Close()
	mounts, err := ParseMountInfo(f)
	if err != nil {
		return false, err
	}
	m, ok := MountOf(mounts, real)
	if !ok {
		return false, fmt.Errorf("no mount holds %s", real)
	}
	return m.Shared, nil
}
