// Package rawio does the data path's socket and file I/O with raw system
// calls (syscall.RawSyscall) instead of the Go runtime's syscall wrappers.
//
// Why: every wrapped system call enters the scheduler's syscall state, and
// when the process was idle (all Ps idle, as between two requests at queue
// depth 1) that wakes the runtime's monitor thread (sysmon), which then polls
// every 20 us for a while before it sleeps again. On the benchmark VM a thread
// wake-up is the most expensive thing on the data path: profiles of the
// controller and the replica showed 25-45 % of their CPU in sysmon and in the
// futex wake that starts it (entersyscallWakeSysmon).
//
// Socket calls here never block (Go's sockets are non-blocking; EAGAIN parks
// the goroutine in the network poller through syscall.RawConn, so deadlines
// and Close work as for net.Conn). File calls (Pread, Pwrite) do block the
// calling thread without handing its P to another thread; callers use them
// for single requests of at most a few MiB on the replica's data files, where
// that is what a wrapped call would cost too, and keep using the wrapped calls
// where a call may block for long (fsync, fallocate). With GOMAXPROCS 1 a
// blocked raw call would stop every goroutine of the process, so there they
// fall back to the wrapped calls (os.File.ReadAt, WriteAt).
package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// maxIov is the most iovecs one writev takes (Linux IOV_MAX).
const maxIov = 1024

// Conn is a net.Conn whose Read, Write and Writev use raw system calls. Other
// methods (deadlines, Close, addresses) are the wrapped connection's.
type Conn struct {
	net.Conn
	rc syscall.RawConn

	wmu sync.Mutex
	iov []syscall.Iovec // writev scratch, guarded by wmu

	// spin is how long Read retries a read that found no data before it
	// parks the goroutine in the network poller (SetReadSpin).
	spin time.Duration
	// spunOut: the last Read spun for the whole of spin and then parked.
	spunOut bool
}

// SetReadSpin makes later Reads retry for up to d (busy, with non-blocking
// reads) when no data is there yet, before they wait in the network poller;
// 0 turns it off. Only the goroutine that reads may call it.
//
// Why: on the benchmark VM parking a goroutine and waking it (epoll, futex,
// a context switch, an idle vCPU woken by an interrupt) costs more than the
// whole answer of a replica on the same node at queue depth 1; a caller that
// knows an answer is due within microseconds spins instead.
func (c *Conn) SetReadSpin(d time.Duration) { c.spin = d }

// SpunOut reports whether the last Read spun for its whole spin and then
// parked: the data came later than the spin, which cost a processor for
// nothing. Only the goroutine that reads may call it.
func (c *Conn) SpunOut() bool { return c.spunOut }

// Wrap returns nc as a *Conn when it exposes its file descriptor (TCP and unix
// sockets), otherwise nc itself (e.g. net.Pipe in tests).
func Wrap(nc net.Conn) net.Conn {
	if c, ok := nc.(*Conn); ok {
		return c
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	return &Conn{Conn: nc, rc: rc}
}

// Read reads up to len(p) bytes; a closed peer is io.EOF.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	var until time.Time
	c.spunOut = false
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			if e == syscall.EAGAIN && c.spin > 0 {
				if until.IsZero() {
					until = time.Now().Add(c.spin)
					continue
				}
				if time.Now().Before(until) {
					continue
				}
				c.spunOut = true
			}
			n, errno = int(r), e
			return e != syscall.EAGAIN
		}
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p (waiting for buffer space as needed).
func (c *Conn) Write(p []byte) (int, error) {
	bufs := net.Buffers{p}
	n, err := c.Writev(&bufs)
	return int(n), err
}

// Writev writes every buffer of *bufs with as few writev calls as possible
// and consumes them as net.Buffers.WriteTo does. It returns the bytes written.
func (c *Conn) Writev(bufs *net.Buffers) (int64, error) {
	n, _, err := c.writev(bufs, true)
	return n, err
}

// TryWritev is Writev without waiting: it writes what the socket takes now
// and returns the bytes written and blocked = true when the socket buffer
// filled up before all of *bufs was written (the rest stays in *bufs).
func (c *Conn) TryWritev(bufs *net.Buffers) (n int64, blocked bool, err error) {
	return c.writev(bufs, false)
}

func (c *Conn) writev(bufs *net.Buffers, wait bool) (int64, bool, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var total int64
	for len(*bufs) > 0 {
		iov := c.iov[:0]
		for _, b := range *bufs {
			if len(b) == 0 {
				continue
			}
			iov = append(iov, syscall.Iovec{Base: &b[0], Len: uint64(len(b))})
			if len(iov) == maxIov {
				break
			}
		}
		c.iov = iov
		if len(iov) == 0 {
			*bufs = (*bufs)[:0]
			break
		}
		var n int
		var errno syscall.Errno
		err := c.rc.Write(func(fd uintptr) bool {
			for {
				r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
				if e == syscall.EINTR {
					continue
				}
				n, errno = int(r), e
				return e != syscall.EAGAIN || !wait
			}
		})
		clear(iov)
		if err == nil && errno == syscall.EAGAIN {
			return total, true, nil
		}
		if err == nil && errno != 0 {
			err = &net.OpError{Op: "write", Net: c.LocalAddr().Network(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("writev", errno)}
		}
		if err != nil {
			return total, false, err
		}
		total += int64(n)
		consume(bufs, int64(n))
	}
	return total, false, nil
}

// consume drops the first n bytes of *bufs, as net.Buffers does after a write.
func consume(bufs *net.Buffers, n int64) {
	for len(*bufs) > 0 {
		l := int64(len((*bufs)[0]))
		if l > n {
			(*bufs)[0] = (*bufs)[0][n:]
			return
		}
		n -= l
		(*bufs)[0] = nil
		*bufs = (*bufs)[1:]
	}
}

// Writev writes *bufs to w, with raw writev when w is a *Conn and with
// net.Buffers.WriteTo otherwise. *bufs is consumed either way.
func Writev(w io.Writer, bufs *net.Buffers) (int64, error) {
	if c, ok := w.(*Conn); ok {
		return c.Writev(bufs)
	}
	return bufs.WriteTo(w)
}

// TryWritev is Conn.TryWritev when w is a *Conn; other writers get a
// blocking net.Buffers.WriteTo (blocked is then always false).
func TryWritev(w io.Writer, bufs *net.Buffers) (n int64, blocked bool, err error) {
	if c, ok := w.(*Conn); ok {
		return c.TryWritev(bufs)
	}
	n, err = bufs.WriteTo(w)
	return n, false, err
}

// errShortWrite is a pwrite that made no progress without an error.
var errShortWrite = errors.New("rawio: pwrite wrote 0 bytes")

// Pread reads len(p) bytes at off from f as os.File.ReadAt does: it returns
// len(p), or fewer and io.EOF at the end of the file, or a *os.PathError.
func Pread(f *os.File, p []byte, off int64) (int, error) {
	if runtime.GOMAXPROCS(0) == 1 {
		return f.ReadAt(p, off)
	}
	fd := f.Fd()
	done := 0
	for done < len(p) {
		r, _, e := syscall.RawSyscall6(syscall.SYS_PREAD64, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done), uintptr(off+int64(done)), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			runtime.KeepAlive(f)
			return done, &os.PathError{Op: "read", Path: f.Name(), Err: e}
		}
		if r == 0 {
			runtime.KeepAlive(f)
			return done, io.EOF
		}
		done += int(r)
	}
	runtime.KeepAlive(f)
	return done, nil
}

// Pwrite writes all of p at off to f as os.File.WriteAt does; errors are
// *os.PathError.
func Pwrite(f *os.File, p []byte, off int64) (int, error) {
	if runtime.GOMAXPROCS(0) == 1 {
		return f.WriteAt(p, off)
	}
	fd := f.Fd()
	done := 0
	for done < len(p) {
		r, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done), uintptr(off+int64(done)), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			runtime.KeepAlive(f)
			return done, &os.PathError{Op: "write", Path: f.Name(), Err: e}
		}
		if r == 0 {
			runtime.KeepAlive(f)
			return done, &os.PathError{Op: "write", Path: f.Name(), Err: errShortWrite}
		}
		done += int(r)
	}
	runtime.KeepAlive(f)
	return done, nil
}
