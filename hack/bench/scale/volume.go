package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

// replicaPorts is how many consecutive ports a replica takes (control,
// data, sync agent, transfers).
const replicaPorts = 10

// env is what starting processes needs.
type env struct {
	dir      string
	longhorn string
	procs    *benchproc.Procs
	ports    *ports
	// revisionCounter runs the engines and replicas with the revision
	// counter on (-revision-counter). Off by default, as the product runs
	// v1 volumes: Longhorn's disable-revision-counter defaults to true.
	revisionCounter bool
}

// counterArgs are the engine's and replica's revision-counter flags:
// --disable-revision-counter unless e.revisionCounter.
func (e *env) counterArgs() []string {
	if e.revisionCounter {
		return nil
	}
	return []string{"--disable-revision-counter"}
}

// replica is one `longhorn engine replica` process.
type replica struct {
	*benchproc.Proc     // nil when an instance manager started it
	pid             int // its pid when an instance manager started it
	dir             string
	addr            string // tcp://127.0.0.1:P, as the engine names it
	pprof           string // HOST:PORT of its --pprof-listen
}

// volume is one engine (`longhorn engine controller` with the NBD frontend
// on a unix socket) and its replicas, started as the instance manager
// starts them: the same binary and command lines, one process each.
type volume struct {
	name      string
	size      int64
	replicas  []*replica
	engine    *benchproc.Proc // nil when an instance manager started it
	enginePID int
	ctlAddr   string // the engine's gRPC HOST:PORT (for `engine ctl --url`)
	pprof     string // the engine's --pprof-listen
	uri       string // NBD URI for fio and nbdinfo
}

// PID is the replica process's pid.
func (r *replica) PID() int {
	if r.Proc != nil {
		return r.Proc.Pid()
	}
	return r.pid
}

// enginePid is the engine process's pid.
func (v *volume) enginePid() int {
	if v.engine != nil {
		return v.engine.Pid()
	}
	return v.enginePID
}

// pids are the pids of v's engine and replicas (enginePid, replica.PID).
func (v *volume) pids() []int {
	out := []int{v.enginePid()}
	for _, r := range v.replicas {
		out = append(out, r.PID())
	}
	return out
}

// pprofAddrs names the --pprof-listen address of v's engine ("engine")
// and of each replica ("r<i>", in list order; the last is the one being
// rebuilt when a rebuild runs).
func (v *volume) pprofAddrs() map[string]string {
	out := map[string]string{"engine": v.pprof}
	for i, r := range v.replicas {
		out["r"+strconv.Itoa(i)] = r.pprof
	}
	return out
}

// startReplica starts a replica process on dir (created if missing) with
// extra environment variables.
func (e *env) startReplica(ctx context.Context, name, dir string, size int64, extra []string) (*replica, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := e.ports.rangeOf(replicaPorts + 1) // + pprof
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r := &replica{dir: dir, addr: "tcp://" + addr, pprof: "127.0.0.1:" + strconv.Itoa(port+replicaPorts)}
	args := append([]string{"engine", "replica", dir, "--size", strconv.FormatInt(size, 10),
		"--listen", addr, "--pprof-listen", r.pprof}, e.counterArgs()...)
	r.Proc, err = e.procs.Start(name, extra, e.longhorn, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// waitReplica waits until r's data port listens.
func waitReplica(ctx context.Context, r *replica) error {
	_, p, _ := cutPort(r.addr)
	if err := waitTCP(ctx, "127.0.0.1:"+strconv.Itoa(p+1), 60*time.Second); err != nil {
		return fmt.Errorf("replica %s: %w (see %s.log)", r.Name, err, r.Name)
	}
	return nil
}

// cutPort splits tcp://HOST:P.
func cutPort(addr string) (string, int, error) {
	i := len(addr) - 1
	for i >= 0 && addr[i] != ':' {
		i--
	}
	p, err := strconv.Atoi(addr[i+1:])
	return addr[:i], p, err
}

// startEngine starts v's engine process over v's replicas; it does not wait.
func (e *env) startEngine(v *volume, extra []string) error {
	port, err := e.ports.rangeOf(2)
	if err != nil {
		return err
	}
	v.ctlAddr = "127.0.0.1:" + strconv.Itoa(port)
	v.pprof = "127.0.0.1:" + strconv.Itoa(port+1)
	sock := filepath.Join(e.dir, v.name+".sock")
	v.uri = "nbd+unix:///" + v.name + "?socket=" + sock
	args := []string{"engine", "controller", v.name, "--size", strconv.FormatInt(v.size, 10), "--frontend", "nbd",
		"--nbd-listen", "unix:" + sock, "--listen", v.ctlAddr, "--pprof-listen", v.pprof}
	for _, r := range v.replicas {
		args = append(args, "--replica", r.addr)
	}
	args = append(args, e.counterArgs()...)
	v.engine, err = e.procs.Start(v.name+"-engine", extra, e.longhorn, args...)
	return err
}

// startVolumes starts n volumes of size bytes with k replicas each, every
// process with the extra environment: all replicas first, then all
// engines, so the n start-ups overlap.
func (e *env) startVolumes(ctx context.Context, prefix string, n, k int, size int64, extra []string) ([]*volume, error) {
	vs := make([]*volume, n)
	for i := range vs {
		v := &volume{name: fmt.Sprintf("%s%d", prefix, i), size: size}
		for j := 0; j < k; j++ {
			name := fmt.Sprintf("%s-r%d", v.name, j)
			r, err := e.startReplica(ctx, name, filepath.Join(e.dir, name), size, extra)
			if err != nil {
				return vs[:i], err
			}
			v.replicas = append(v.replicas, r)
		}
		vs[i] = v
	}
	for _, v := range vs {
		for _, r := range v.replicas {
			if err := waitReplica(ctx, r); err != nil {
				return vs, err
			}
		}
		if err := e.startEngine(v, extra); err != nil {
			return vs, err
		}
	}
	for _, v := range vs {
		if err := benchproc.WaitNBD(ctx, v.uri, 90*time.Second); err != nil {
			return vs, fmt.Errorf("engine %s: %w (see %s-engine.log)", v.name, err, v.name)
		}
	}
	return vs, nil
}

// stopVolumes stops every process of vs and removes the replica data.
func stopVolumes(vs []*volume) {
	var ps []*benchproc.Proc
	for _, v := range vs {
		if v == nil {
			continue
		}
		if v.engine != nil {
			ps = append(ps, v.engine)
		}
	}
	benchproc.StopEach(ps)
	ps = ps[:0]
	for _, v := range vs {
		if v == nil {
			continue
		}
		for _, r := range v.replicas {
			if r.Proc != nil {
				ps = append(ps, r.Proc)
			}
		}
	}
	benchproc.StopEach(ps)
	for _, v := range vs {
		if v == nil {
			continue
		}
		for _, r := range v.replicas {
			removeLater(r.dir)
		}
	}
}

// removing counts the directories being removed in the background:
// deleting a sparse file of many extents takes tens of seconds on a busy
// ext4 disk, a cost of the file system, not of what is measured.
var removing sync.WaitGroup

// removeLater removes dir in the background (waitRemoved waits for all).
func removeLater(dir string) {
	removing.Add(1)
	go func() { defer removing.Done(); _ = os.RemoveAll(dir) }()
}

// waitRemoved waits until every removeLater finished.
func waitRemoved() { removing.Wait() }
