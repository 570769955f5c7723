package syncagent

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBackgroundLowersOnlyItsThread: the copy's thread runs at copyNice,
// the rest of the process keeps its priority.
func TestBackgroundLowersOnlyItsThread(t *testing.T) {
	niceOf := func(tid int) int {
		raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if err != nil {
			t.Fatal(err)
		}
		return 20 - raw // the raw syscall answers 20 - nice
	}
	runtime.LockOSThread() // this goroutine's own thread, not niced by a copy
	defer runtime.UnlockOSThread()
	before := niceOf(unix.Gettid())
	got := make(chan int)
	go func() {
		background()
		got <- niceOf(unix.Gettid())
	}()
	if n := <-got; n != max(before, copyNice) {
		t.Fatalf("copy thread nice = %d, want %d", n, max(before, copyNice))
	}
	if n := niceOf(unix.Gettid()); n != before {
		t.Fatalf("test thread nice = %d after a copy goroutine, want %d", n, before)
	}
}
