package procstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Mem is a process's memory and thread count from /proc/PID/status and
// /proc/PID/smaps_rollup (proc(5)), sizes in KiB.
type Mem struct {
	RSS, HWM             uint64 // VmRSS, VmHWM (peak RSS)
	Anon, File, Shmem    uint64 // RssAnon, RssFile, RssShmem
	Threads              int    // Threads
	PSS, PrivateClean    uint64 // smaps_rollup Pss, Private_Clean
	PrivateDirty, Shared uint64 // smaps_rollup Private_Dirty, Shared_Clean+Shared_Dirty
}

// Unique is the memory only this process holds (USS, KiB): what stopping it
// gives back.
func (m Mem) Unique() uint64 { return m.PrivateClean + m.PrivateDirty }

// ParseStatus fills the /proc/PID/status fields of m from the file's text;
// "Key:\tvalue kB" lines, unknown keys ignored.
func ParseStatus(text string, m *Mem) {
	eachField(text, func(k string, v uint64) {
		switch k {
		case "VmRSS":
			m.RSS = v
		case "VmHWM":
			m.HWM = v
		case "RssAnon":
			m.Anon = v
		case "RssFile":
			m.File = v
		case "RssShmem":
			m.Shmem = v
		case "Threads":
			m.Threads = int(v)
		}
	})
}

// ParseRollup fills the /proc/PID/smaps_rollup fields of m from the file's
// text (the same "Key: value kB" lines after one header line).
func ParseRollup(text string, m *Mem) {
	eachField(text, func(k string, v uint64) {
		switch k {
		case "Pss":
			m.PSS = v
		case "Private_Clean":
			m.PrivateClean = v
		case "Private_Dirty":
			m.PrivateDirty = v
		case "Shared_Clean", "Shared_Dirty":
			m.Shared += v
		}
	})
}

// eachField calls f for every "Key: number[ kB]" line of text.
func eachField(text string, f func(k string, v uint64)) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(fs[0], 10, 64); err == nil {
			f(k, v)
		}
	}
}

// ReadMem reads the memory of pid. Errors: the files' (fs.ErrNotExist once
// the process is gone); smaps_rollup (Linux 4.14+) missing leaves PSS and
// the private sizes 0.
func ReadMem(pid int) (Mem, error) {
	var m Mem
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	b, err := os.ReadFile(dir + "status")
	if err != nil {
		return m, err
	}
	ParseStatus(string(b), &m)
	if b, err := os.ReadFile(dir + "smaps_rollup"); err == nil {
		ParseRollup(string(b), &m)
	}
	return m, nil
}

// OpenFDs counts the open file descriptors of pid (entries of
// /proc/PID/fd; reading another user's needs privilege).
func OpenFDs(pid int) (int, error) {
	es, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return len(es), err
}
