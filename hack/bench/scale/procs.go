package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"
)

// ports hands out loopback TCP ports that are free now and were not handed
// out before in this run (the processes bind them later). They come from
// below the kernel's ephemeral range (ip_local_port_range starts at 32768
// by default), so outgoing connections do not take them in between.
type ports struct {
	mu   sync.Mutex
	used map[int]bool
	next int
}

// Port range scanned by ports.rangeOf.
const (
	portLow  = 20000
	portHigh = 32000
)

// rangeOf returns the first of n consecutive such ports.
func (pp *ports) rangeOf(n int) (int, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.used == nil {
		pp.used = map[int]bool{}
		pp.next = portLow + rand.IntN(portHigh-portLow)
	}
	for tried := 0; tried < portHigh-portLow; tried += n {
		base := pp.next
		if pp.next += n; pp.next+n > portHigh {
			pp.next = portLow
		}
		if base+n > portHigh || !pp.free(base, n) {
			continue
		}
		for i := 0; i < n; i++ {
			pp.used[base+i] = true
		}
		return base, nil
	}
	return 0, fmt.Errorf("no %d consecutive free ports in %d-%d", n, portLow, portHigh)
}

// free reports whether base..base+n-1 are unused here and bindable now.
func (pp *ports) free(base, n int) bool {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		if pp.used[base+i] {
			return false
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			return false
		}
		ls = append(ls, l)
	}
	return true
}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s not listening after %v", addr, timeout)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
