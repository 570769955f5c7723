package nodeagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
)

// probe runs the container's startup probe until it succeeds, then its
// readiness and liveness probes, until ctx ends (the run is over). A failed
// startup or liveness probe kills the run; readiness sets Ready.
func (c *container) probe(ctx context.Context, pid int) {
	if p := c.spec.StartupProbe; p != nil {
		ok := c.runProber(ctx, p, pid, func(ok bool) bool { return true })
		if ctx.Err() != nil {
			return
		}
		if !ok {
			klog.Infof("pod %s container %s: startup probe failed; killing", c.r.key(), c.spec.Name)
			c.kill(pid)
			return
		}
		c.setProbeResult(pid, func() { c.started = true })
	}
	if p := c.spec.ReadinessProbe; p != nil {
		go c.runProber(ctx, p, pid, func(ok bool) bool {
			c.setProbeResult(pid, func() { c.ready = ok })
			return false
		})
	}
	if p := c.spec.LivenessProbe; p != nil {
		ok := c.runProber(ctx, p, pid, func(ok bool) bool { return !ok })
		if !ok && ctx.Err() == nil {
			klog.Infof("pod %s container %s: liveness probe failed; killing", c.r.key(), c.spec.Name)
			c.kill(pid)
		}
	}
}

// setProbeResult applies f when pid is still the running process.
func (c *container) setProbeResult(pid int, f func()) {
	c.r.mu.Lock()
	changed := c.pid == pid && c.state.Running != nil
	if changed {
		f()
	}
	c.r.mu.Unlock()
	if changed {
		c.r.notify()
	}
}

// runProber probes every period after the initial delay and calls report
// each time the success or failure threshold is reached; it returns the
// last result when report says stop, or false when ctx ends.
func (c *container) runProber(ctx context.Context, p *corev1.Probe, pid int, report func(ok bool) (stop bool)) bool {
	period := secondsOr(p.PeriodSeconds, 10)
	succThr, failThr := intOr(p.SuccessThreshold, 1), intOr(p.FailureThreshold, 3)
	if !sleepCtx(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return false
	}
	succ, fail := 0, 0
	var last *bool
	for {
		err := c.probeOnce(ctx, p, pid)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
			klog.V(2).Infof("pod %s container %s: probe: %v", c.r.key(), c.spec.Name, err)
		}
		var res *bool
		if succ >= succThr {
			t := true
			res = &t
		} else if fail >= failThr {
			f := false
			res = &f
		}
		if res != nil && (last == nil || *last != *res) {
			last = res
			if report(*res) {
				return *res
			}
		}
		if !sleepCtx(ctx, period) {
			return false
		}
	}
}

func secondsOr(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func intOr(v, def int32) int {
	if v <= 0 {
		return int(def)
	}
	return int(v)
}

// probeOnce runs one probe attempt within its timeout.
func (c *container) probeOnce(ctx context.Context, p *corev1.Probe, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, secondsOr(p.TimeoutSeconds, 1))
	defer cancel()
	h := p.ProbeHandler
	switch {
	case h.Exec != nil:
		c.r.mu.Lock()
		env := c.env
		c.r.mu.Unlock()
		cmd := c.r.a.nsenterCmd(ctx, pid, h.Exec.Command, env)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("exec %v: %w: %s", h.Exec.Command, err, strings.TrimSpace(string(out)))
		}
		return nil
	case h.HTTPGet != nil:
		return c.httpProbe(ctx, h.HTTPGet)
	case h.TCPSocket != nil:
		port, err := c.port(h.TCPSocket.Port)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(hostOr(h.TCPSocket.Host, c.r.a.cfg.NodeIP), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case h.GRPC != nil:
		return c.grpcProbe(ctx, h.GRPC)
	}
	return errors.New("probe has no handler")
}

func hostOr(h, def string) string {
	if h == "" {
		return def
	}
	return h
}

func (c *container) httpProbe(ctx context.Context, g *corev1.HTTPGetAction) error {
	port, err := c.port(g.Port)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := scheme + "://" + net.JoinHostPort(hostOr(g.Host, c.r.a.cfg.NodeIP), strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for _, hd := range g.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // kubelet does not verify probe certificates either
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

func (c *container) grpcProbe(ctx context.Context, g *corev1.GRPCAction) error {
	addr := net.JoinHostPort(c.r.a.cfg.NodeIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	svc := ""
	if g.Service != nil {
		svc = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
	if err != nil {
		return err
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("grpc health %s: %v", addr, resp.Status)
	}
	return nil
}

// port resolves a numeric or named container port.
func (c *container) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.spec.Name, p.StrVal)
}

// nsenterCmd runs argv inside the mount namespace of pid (the container's
// view of volumes) with env; the agent is already in the node's netns.
func (a *Agent) nsenterCmd(ctx context.Context, pid int, argv, env []string) *exec.Cmd {
	args := append([]string{"--target", strconv.Itoa(pid), "--mount", "--"}, argv...)
	cmd := exec.CommandContext(ctx, a.nsenter, args...)
	cmd.Env = env
	return cmd
}
