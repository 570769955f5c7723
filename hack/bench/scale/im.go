package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

// The "im" variant starts the volumes as the manager does: one
// `longhorn instance-manager` process, and every replica and engine created
// through its InstanceService (InstanceCreate with engineapi's specs). It
// measures the instance manager itself next to the processes it runs.

// imVariant is the variant name that starts volumes through an instance manager.
const imVariant = "im"

// imPortsPerVolume is what one volume of one replica takes from the
// instance manager's port range: the replica's ports and the engine's.
const imPortsPerVolume = engineapi.ReplicaPortCount + engineapi.EnginePortCount

// instanceManager is one `longhorn instance-manager` process and a client of it.
type instanceManager struct {
	proc   *benchproc.Proc
	client *engineapi.InstanceManagerClient
	h      *engineapi.Handler
	pprof  string // "" : the instance manager serves no pprof
}

// startIM starts an instance manager whose port range fits n volumes.
func (e *env) startIM(ctx context.Context, name string, n int, extra []string) (*instanceManager, error) {
	base, err := e.ports.rangeOf(2)
	if err != nil {
		return nil, err
	}
	span := n*imPortsPerVolume + 8
	lo, err := e.ports.rangeOf(span)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.dir, name)
	listen := "127.0.0.1:" + strconv.Itoa(base)
	p, err := e.procs.Start(name, extra, e.longhorn, "instance-manager", "--listen", listen,
		"--proxy-listen", "127.0.0.1:"+strconv.Itoa(base+1), "--data-root", dir, "--cgroups=false",
		"--tls-dir", filepath.Join(dir, "no-tls"), "--port-range", fmt.Sprintf("%d-%d", lo, lo+span-1))
	if err != nil {
		return nil, err
	}
	im := &instanceManager{proc: p, h: engineapi.NewHandler(engineapi.HandlerOptions{})}
	deadline := time.Now().Add(60 * time.Second)
	for {
		im.client, err = im.h.InstanceManager(ctx, engineapi.IMAddress{Address: listen, ProxyAddress: "127.0.0.1:" + strconv.Itoa(base+1)})
		if err == nil {
			return im, nil
		}
		if time.Now().After(deadline) || p.Exited() {
			im.stop()
			return nil, fmt.Errorf("instance manager %s: %w (see %s.log)", name, err, name)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			im.stop()
			return nil, err
		}
	}
}

// stop ends the instance manager, which stops every process it runs.
func (im *instanceManager) stop() {
	im.h.Close()
	im.proc.Stop()
}

// waitRunning waits until the instance is running and returns it.
func (im *instanceManager) waitRunning(ctx context.Context, name string, typ engineapi.InstanceType) (*engineapi.Instance, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		inst, err := im.client.InstanceGet(ctx, name, typ)
		if err == nil && inst.Status.State == engineapi.InstanceStateRunning {
			return inst, nil
		}
		if err == nil && inst.Status.State == engineapi.InstanceStateError {
			return nil, fmt.Errorf("instance %s: %s", name, inst.Status.ErrorMsg)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("instance %s not running after 90s (last: %v)", name, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// startVolumesIM starts n volumes of one replica each through im, with the
// same frontend (NBD on a unix socket) as startVolumes, and finds each
// process's pid among im's children.
func (e *env) startVolumesIM(ctx context.Context, im *instanceManager, prefix string, n int, size int64) ([]*volume, error) {
	vs := make([]*volume, 0, n)
	for i := 0; i < n; i++ {
		v := &volume{name: fmt.Sprintf("%s%d", prefix, i), size: size}
		r := &replica{dir: filepath.Join(e.dir, v.name+"-r0")}
		pp, err := e.ports.rangeOf(1)
		if err != nil {
			return vs, err
		}
		r.pprof = "127.0.0.1:" + strconv.Itoa(pp)
		spec := engineapi.ReplicaInstanceSpec(engineapi.ReplicaOptions{Name: v.name + "-r0", VolumeName: v.name, DataDir: r.dir,
			Size: size, ListenHost: "127.0.0.1", ExtraArgs: []string{"--pprof-listen", r.pprof},
			DisableRevisionCounter: !e.revisionCounter})
		if _, err := im.client.InstanceCreate(ctx, spec); err != nil {
			return vs, err
		}
		v.replicas = []*replica{r}
		vs = append(vs, v)
	}
	for _, v := range vs {
		if err := e.startEngineIM(ctx, im, v); err != nil {
			return vs, err
		}
	}
	for _, v := range vs {
		if err := benchproc.WaitNBD(ctx, v.uri, 90*time.Second); err != nil {
			return vs, fmt.Errorf("engine %s: %w", v.name, err)
		}
	}
	return vs, findPIDs(im.proc.Pid(), vs)
}

// startEngineIM waits for v's replica and creates v's engine through im.
func (e *env) startEngineIM(ctx context.Context, im *instanceManager, v *volume) error {
	r := v.replicas[0]
	inst, err := im.waitRunning(ctx, v.name+"-r0", engineapi.InstanceTypeReplica)
	if err != nil {
		return err
	}
	r.addr = engineapi.ReplicaAddress("127.0.0.1", inst)
	pp, err := e.ports.rangeOf(1)
	if err != nil {
		return err
	}
	v.pprof = "127.0.0.1:" + strconv.Itoa(pp)
	sock := filepath.Join(e.dir, v.name+".sock")
	v.uri = "nbd+unix:///" + v.name + "?socket=" + sock
	spec := engineapi.EngineInstanceSpec(engineapi.EngineOptions{Name: v.name + "-e", VolumeName: v.name, Size: v.size,
		Frontend: "nbd", FrontendArgs: []string{"--nbd-listen", "unix:" + sock}, Replicas: []string{r.addr},
		ListenHost: "127.0.0.1", ExtraArgs: append([]string{"--pprof-listen", v.pprof}, e.counterArgs()...)})
	_, err = im.client.InstanceCreate(ctx, spec)
	return err
}

// findPIDs sets the pid of every replica and engine of vs from the
// children of parent, matched by the instance name on their command line.
func findPIDs(parent int, vs []*volume) error {
	byName := map[string]int{}
	for _, pid := range childPIDs(parent) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--replica-instance-name" || args[i] == "--engine-instance-name" {
				byName[args[i+1]] = pid
			}
		}
	}
	for _, v := range vs {
		v.enginePID = byName[v.name+"-e"]
		v.replicas[0].pid = byName[v.name+"-r0"]
		if v.enginePID == 0 || v.replicas[0].pid == 0 {
			return fmt.Errorf("volume %s: engine or replica process not found among the instance manager's children", v.name)
		}
	}
	return nil
}

// childPIDs lists the children of pid (/proc/PID/task/*/children, proc(5)).
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}
