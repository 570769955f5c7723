package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engine/frontend/iscsi"

	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

// iSCSI rows (issue 4), driven by a fio built with the libiscsi engine
// (`make fio-libiscsi`, cached outside the work tree):
//
//	(t) Debian's tgtd serving a preallocated file with --bstype rdwr: the peer baseline;
//	(g) our iSCSI target in-process over a plain file: the frontend's own cost;
//	(i) the engine with 1 replica, (j) with 3 replicas, through the iSCSI frontend.
func init() {
	registerTarget(Target{Key: "t", Order: 50, Name: "tgtd rdwr on a file (iSCSI peer baseline)", Start: startTgtd})
	registerTarget(Target{Key: "g", Order: 60, Name: "longhorn iSCSI frontend over a plain file (no engine)",
		Baseline: "t", MinRead: 1.0, MinWrite: 1.0, Start: startISCSIFile})
	registerTarget(Target{Key: "i", Order: 70, Name: "longhorn engine, 1 replica, iSCSI frontend",
		Baseline: "t", MinRead: 1.0, MinWrite: 1.0, Start: engineISCSIStarter(1)})
	registerTarget(Target{Key: "j", Order: 80, Name: "longhorn engine, 3 replicas, iSCSI frontend",
		Baseline: "t", MinRead: 0.5, MinWrite: 0.3, Start: engineISCSIStarter(3)})
	// A/B rows: (i) and (j) with the -longhorn-alt binary.
	registerTarget(Target{Key: "I", Order: 71, Name: "(i) with the -longhorn-alt binary",
		Baseline: "t", MinRead: 1.0, MinWrite: 1.0, Start: withAlt(engineISCSIStarter(1)), Optional: true})
	registerTarget(Target{Key: "J", Order: 81, Name: "(j) with the -longhorn-alt binary",
		Baseline: "t", MinRead: 0.5, MinWrite: 0.3, Start: withAlt(engineISCSIStarter(3)), Optional: true})
}

const fioInitiator = "iqn.2024-01.io.longhorn:bench-fio"

// fioLibiscsi finds the fio with the libiscsi engine: $FIO_LIBISCSI, else
// the cache of `make fio-libiscsi`.
func fioLibiscsi() (string, error) {
	p := os.Getenv("FIO_LIBISCSI")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "longhorn-testbed", "fio-libiscsi-3.33", "fio")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: no fio with the libiscsi engine at %s (run make fio-libiscsi)", errUnavailable, p)
	}
	return p, nil
}

// iscsiEndpoint is the fio engine and target of LUN 1 of iqn at addr; fio
// takes ':' as a file separator, so every ':' of the URL is escaped.
func iscsiEndpoint(addr, iqn string) (*Endpoint, error) {
	bin, err := fioLibiscsi()
	if err != nil {
		return nil, err
	}
	url := strings.ReplaceAll(fmt.Sprintf("iscsi://%s/%s/1", addr, iqn), ":", `\:`)
	return &Endpoint{FioBinary: bin, FioArgs: []string{"--ioengine=libiscsi", "--initiator=" + fioInitiator, "--filename=" + url}}, nil
}

// startTgtd is row (t): tgtd with a private control port (-C) and a free
// portal port, one LUN on a preallocated file. tgtd ignores SIGTERM while
// it has targets, so Stop deletes them with tgtadm first.
func startTgtd(ctx context.Context, env *Env) (*Endpoint, error) {
	bin, err := needTool("tgtd")
	if err != nil {
		return nil, err
	}
	adm, err := needTool("tgtadm")
	if err != nil {
		return nil, err
	}
	img := filepath.Join(env.Dir, "tgtd.img")
	if err := preallocate(img, env.Size); err != nil {
		return nil, err
	}
	port, err := freePortRange(1)
	if err != nil {
		return nil, err
	}
	ctl, err := freeTgtdControlPort(ctx, adm)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := env.Procs.Start("tgtd", nil, bin, "-f", "-C", ctl, "--iscsi", "portal="+addr)
	if err != nil {
		return nil, err
	}
	iqn := "iqn.2024-01.io.longhorn:bench"
	stop := func() {
		adm := func(args ...string) { _ = exec.Command(adm, append([]string{"-C", ctl}, args...)...).Run() }
		adm("--lld", "iscsi", "--op", "delete", "--mode", "target", "--tid", "1", "--force")
		adm("--op", "delete", "--mode", "system")
		p.Stop()
		_ = os.Remove(img)
	}
	steps := [][]string{
		{"--op", "new", "--mode", "target", "--tid", "1", "-T", iqn},
		{"--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", "1", "-b", img, "--bstype", "rdwr"},
		{"--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL"},
	}
	for _, s := range steps {
		if err := retry(ctx, 10*time.Second, func() error {
			out, err := exec.CommandContext(ctx, adm, append([]string{"-C", ctl, "--lld", "iscsi"}, s...)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("tgtadm %v: %w: %s", s, err, out)
			}
			return nil
		}); err != nil {
			stop()
			return nil, err
		}
	}
	ep, err := iscsiEndpoint(addr, iqn)
	if err != nil {
		stop()
		return nil, err
	}
	ep.Pids, ep.Stop, ep.Data = []int{p.Pid()}, stop, []string{img}
	return ep, nil
}

// freeTgtdControlPort picks a -C value (0..32767) no running tgtd answers on.
func freeTgtdControlPort(ctx context.Context, adm string) (string, error) {
	for i := 0; i < 50; i++ {
		c := strconv.Itoa(1000 + rand.IntN(31000))
		if exec.CommandContext(ctx, adm, "-C", c, "--op", "show", "--mode", "sys").Run() != nil {
			return c, nil
		}
	}
	return "", errors.New("no free tgtd control port")
}

func retry(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startISCSIFile is row (g): our iSCSI target in the harness process over a
// preallocated file.
func startISCSIFile(ctx context.Context, env *Env) (*Endpoint, error) {
	if _, err := fioLibiscsi(); err != nil {
		return nil, err
	}
	img := filepath.Join(env.Dir, "iscsi-frontend.img")
	if err := preallocate(img, env.Size); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	tg, err := iscsi.New(iscsi.Config{Listen: "127.0.0.1:0"})
	if err == nil {
		err = tg.Startup(ctx, "vol", env.Size, &fileBackend{f: f, size: env.Size})
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	ep, err := iscsiEndpoint(tg.Addr().String(), iscsi.IQN("vol"))
	if err != nil {
		_ = tg.Shutdown()
		_ = f.Close()
		return nil, err
	}
	ep.Pids = []int{os.Getpid()}
	ep.Data = []string{img}
	ep.Stop = func() {
		_ = tg.Shutdown()
		_ = f.Close()
		_ = os.Remove(img)
	}
	return ep, nil
}

// engineISCSIStarter is rows (i) and (j): n `longhorn engine replica`
// processes and a `longhorn engine controller --frontend iscsi`.
func engineISCSIStarter(n int) func(context.Context, *Env) (*Endpoint, error) {
	return func(ctx context.Context, env *Env) (*Endpoint, error) {
		if _, err := fioLibiscsi(); err != nil {
			return nil, err
		}
		if err := engineAvailable(ctx, env.Longhorn); err != nil {
			return nil, err
		}
		var started []*benchproc.Proc
		stop := func() {
			for i := len(started) - 1; i >= 0; i-- {
				started[i].Stop()
			}
		}
		ep, err := startISCSIEngine(ctx, env, n, &started)
		if err != nil {
			stop()
			return nil, err
		}
		for _, p := range started {
			ep.Processes = append(ep.Processes, Process{Name: strings.TrimPrefix(p.Name, fmt.Sprintf("%siscsi%d-", env.Tag, n)), Pid: p.Pid()})
		}
		for i := range n {
			ep.Data = append(ep.Data, filepath.Join(env.Dir, fmt.Sprintf("%siscsi%d-replica%d", env.Tag, n, i)))
		}
		ep.Stop = stop
		return ep, nil
	}
}

// startISCSIEngine starts the replicas and the controller, appending every
// process to started (the caller stops them on error).
func startISCSIEngine(ctx context.Context, env *Env, n int, started *[]*benchproc.Proc) (*Endpoint, error) {
	size := strconv.FormatInt(env.Size, 10)
	ctlArgs := []string{"engine", "controller", "vol", "--size", size, "--frontend", "iscsi"}
	for i := range n {
		name := fmt.Sprintf("%siscsi%d-replica%d", env.Tag, n, i)
		dir := filepath.Join(env.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		port, err := freePortRange(replicaPorts)
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := append([]string{"engine", "replica", dir, "--size", size, "--listen", addr}, env.engineFlags(env.ReplicaFlags)...)
		p, err := env.Procs.Start(name, nil, env.Longhorn, args...)
		if err != nil {
			return nil, err
		}
		*started = append(*started, p)
		if err := waitTCP(ctx, "127.0.0.1:"+strconv.Itoa(port+1), 30*time.Second); err != nil {
			return nil, fmt.Errorf("replica %d: %w (see %s.log)", i, err, p.Name)
		}
		ctlArgs = append(ctlArgs, "--replica", "tcp://"+addr)
	}
	ports, err := freePortRange(2)
	if err != nil {
		return nil, err
	}
	portal := "127.0.0.1:" + strconv.Itoa(ports)
	ctlArgs = append(ctlArgs, "--iscsi-listen", portal, "--listen", "127.0.0.1:"+strconv.Itoa(ports+1))
	ctlArgs = append(ctlArgs, env.engineFlags(env.ControllerFlags)...)
	ctl, err := env.Procs.Start(fmt.Sprintf("%siscsi%d-controller", env.Tag, n), nil, env.Longhorn, ctlArgs...)
	if err != nil {
		return nil, err
	}
	*started = append(*started, ctl)
	if err := waitTCP(ctx, portal, 60*time.Second); err != nil {
		return nil, fmt.Errorf("controller: %w (see %s.log)", err, ctl.Name)
	}
	return iscsiEndpoint(portal, iscsi.IQN("vol"))
}
