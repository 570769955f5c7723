package syncagent

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// copyNice is the nice value of the threads that copy a rebuild's data
// (sender workers, receiver write handlers). A rebuild is background
// work: on a busy node the CPU goes first to the volumes' own I/O (the
// engine and replica threads at nice 0), and the copy takes what is left,
// which on an idle node is all of it. Nice 10 weighs 110 against nice 0's
// 1024 in the kernel's scheduler (sched_prio_to_weight).
const copyNice = 10

// background locks the calling goroutine to its OS thread and lowers that
// thread's CPU priority to copyNice (setpriority with a thread id affects
// only that thread on Linux). It never unlocks: when the goroutine ends,
// the Go runtime ends the thread with it, so no other goroutine ever runs
// on a lowered thread. A failure to lower (a kernel or sandbox that
// refuses) leaves the thread as it was, and so does a thread already
// nicer than copyNice (the process runs niced).
func background() {
	runtime.LockOSThread()
	tid := unix.Gettid()
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil || 20-raw >= copyNice { // the raw syscall answers 20 - nice
		return
	}
	_ = unix.Setpriority(unix.PRIO_PROCESS, tid, copyNice)
}
