package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// component is a kube-controller-manager or kube-scheduler process.
type component struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // exit status, valid after done is closed
}

// StartControllers starts kube-controller-manager and kube-scheduler against
// the Env (admin kubeconfig, no leader election, health on a free loopback
// port) and waits until both answer /healthz. Needed by tests that use
// Deployments, DaemonSets, garbage collection, namespace deletion, default
// ServiceAccounts or pods without spec.nodeName. Extra flags are not
// supported here; use StartControllerManager / StartScheduler for them.
// Stop stops them. Errors carry the tail of the component's log.
func (e *Env) StartControllers() error {
	if err := e.StartControllerManager(); err != nil {
		return err
	}
	return e.StartScheduler()
}

// StartControllerManager starts kube-controller-manager (from the assets
// directory) with the given extra flags ("--name=value") appended to the
// defaults. Its log is Dir/kube-controller-manager.log.
func (e *Env) StartControllerManager(extraArgs ...string) error {
	caFile := filepath.Join(e.Dir, "ca.crt")
	if err := os.WriteFile(caFile, e.Config.CAData, 0o644); err != nil {
		return fmt.Errorf("testenv: writing CA: %w", err)
	}
	saKey := filepath.Join(e.Environment.ControlPlane.GetAPIServer().CertDir, "sa-signer.key")
	args := append([]string{
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + caFile,
		"--use-service-account-credentials=false",
		"--cert-dir=" + filepath.Join(e.Dir, "kcm-certs"),
	}, extraArgs...)
	return e.startComponent("kube-controller-manager", args)
}

// StartScheduler starts kube-scheduler (from the assets directory) with the
// given extra flags appended to the defaults. Its log is
// Dir/kube-scheduler.log.
func (e *Env) StartScheduler(extraArgs ...string) error {
	return e.startComponent("kube-scheduler", append([]string{
		"--cert-dir=" + filepath.Join(e.Dir, "scheduler-certs"),
	}, extraArgs...))
}

// startComponent starts a component on a free port and waits for /healthz;
// it retries with another port when the process exits early (the port may
// have been taken between the check and the bind).
func (e *Env) startComponent(name string, args []string) error {
	bin := filepath.Join(e.AssetsDir, name)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%w: %s=%s lacks %s; run `make testbin`", ErrNoAssets, AssetsEnv, e.AssetsDir, name)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		c, err := e.spawnComponent(name, bin, port, args)
		if err != nil {
			return err
		}
		err = waitHealthy(c, port, 90*time.Second)
		if err == nil {
			e.components = append(e.components, c)
			return nil
		}
		_ = c.stop()
		lastErr = fmt.Errorf("testenv: %s did not become healthy: %w\n--- %s.log (tail)\n%s", name, err, name, tail(c.log.Name(), 20))
		if !errors.Is(err, errExited) {
			break
		}
	}
	return lastErr
}

func (e *Env) spawnComponent(name, bin string, port int, args []string) (*component, error) {
	logf, err := e.logFile(name + ".log")
	if err != nil {
		return nil, err
	}
	all := append([]string{
		"--kubeconfig=" + e.KubeconfigPath,
		"--authentication-kubeconfig=" + e.KubeconfigPath,
		"--authorization-kubeconfig=" + e.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
	}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &component{name: name, cmd: cmd, log: logf, done: make(chan struct{})}
	if err := e.spawner.do(cmd.Start); err != nil {
		return nil, fmt.Errorf("testenv: starting %s: %w", name, err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

var errExited = errors.New("process exited")

// waitHealthy polls https://127.0.0.1:port/healthz until it answers 200.
func waitHealthy(c *component, port int, timeout time.Duration) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed serving cert of a local test process
	}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return fmt.Errorf("%w: %v", errExited, c.err)
		case <-ctx.Done():
			return fmt.Errorf("no 200 from %s within %v", url, timeout)
		case <-tick.C:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// stop sends SIGTERM, waits up to 20 s, then SIGKILL.
func (c *component) stop() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(20 * time.Second):
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return fmt.Errorf("testenv: %s ignored SIGTERM for 20s; killed", c.name)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
