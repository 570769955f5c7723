package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ifCounters are one interface's byte counters.
type ifCounters struct{ rxBytes, txBytes uint64 }

func (c ifCounters) rx() uint64 { return c.rxBytes }
func (c ifCounters) tx() uint64 { return c.txBytes }

func (c ifCounters) plus(o ifCounters) ifCounters {
	return ifCounters{c.rxBytes + o.rxBytes, c.txBytes + o.txBytes}
}

func (c ifCounters) minus(o ifCounters) ifCounters {
	return ifCounters{c.rxBytes - o.rxBytes, c.txBytes - o.txBytes}
}

// String renders "rx N MiB / tx N MiB".
func (c ifCounters) String() string {
	return fmt.Sprintf("rx %.1f MiB / tx %.1f MiB", float64(c.rxBytes)/(1<<20), float64(c.txBytes)/(1<<20))
}

// linkCounts are the host-side counters of every node's two links: the
// storage veth on the storage bridge and the node veth on the cluster
// bridge (the pod network's traffic between nodes crosses it). Every byte
// one node sends another is received by the sender's host veth end, so
// the sum of rx over a bridge's veths is the traffic across that bridge.
type linkCounts struct {
	storageOf, podOf map[int]ifCounters
	storage, pod     ifCounters
}

// linkCounters reads /sys/class/net/<veth>/statistics of every node's
// storage and node veth (root namespace).
func (e *testEnv) linkCounters() linkCounts {
	e.t.Helper()
	lc := linkCounts{storageOf: map[int]ifCounters{}, podOf: map[int]ifCounters{}}
	for i := 1; i <= e.c.Nodes; i++ {
		s, err := readIfCounters(e.c.StorageVeth(i))
		e.must(err)
		p, err := readIfCounters(e.c.HostVeth(i))
		e.must(err)
		lc.storageOf[i], lc.podOf[i] = s, p
		lc.storage, lc.pod = lc.storage.plus(s), lc.pod.plus(p)
	}
	return lc
}

// minus returns the counters' growth since before.
func (lc linkCounts) minus(before linkCounts) linkCounts {
	d := linkCounts{storageOf: map[int]ifCounters{}, podOf: map[int]ifCounters{},
		storage: lc.storage.minus(before.storage), pod: lc.pod.minus(before.pod)}
	for i, c := range lc.storageOf {
		d.storageOf[i] = c.minus(before.storageOf[i])
	}
	for i, c := range lc.podOf {
		d.podOf[i] = c.minus(before.podOf[i])
	}
	return d
}

// readIfCounters reads an interface's rx_bytes and tx_bytes.
func readIfCounters(dev string) (ifCounters, error) {
	var c ifCounters
	for name, dst := range map[string]*uint64{"rx_bytes": &c.rxBytes, "tx_bytes": &c.txBytes} {
		b, err := os.ReadFile(filepath.Join("/sys/class/net", dev, "statistics", name))
		if err != nil {
			return c, err
		}
		if *dst, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return c, fmt.Errorf("%s %s: %w", dev, name, err)
		}
	}
	return c, nil
}
