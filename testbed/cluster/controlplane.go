package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Control-plane component names (State.Procs keys) and the health ports of
// KCM and scheduler (bound on the gateway address).
const (
	compEtcd      = "etcd"
	compAPIServer = "kube-apiserver"
	compKCM       = "kube-controller-manager"
	compScheduler = "kube-scheduler"
	kcmPort       = 10257
	schedulerPort = 10259
)

type component struct {
	name   string
	argv   []string
	health string // URL answering 200 when ready
}

func (c *Config) logPath(name string) string { return filepath.Join(c.StateDir, "logs", name+".log") }

func (c *Config) components() []component {
	gw := c.Gateway().String()
	etcdURL := "http://" + net.JoinHostPort(gw, strconv.Itoa(c.EtcdPort))
	peerURL := "http://" + net.JoinHostPort(gw, strconv.Itoa(c.EtcdPort+1))
	kc := c.KubeconfigPath()
	bin := func(n string) string { return filepath.Join(c.AssetsDir, n) }
	hostPort := func(p int) string { return "https://" + net.JoinHostPort(gw, strconv.Itoa(p)) + "/healthz" }
	return []component{
		{compEtcd, []string{bin("etcd"), "--name=" + c.Name, "--data-dir=" + filepath.Join(c.StateDir, "etcd"),
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=" + c.Name + "=" + peerURL, "--unsafe-no-fsync", "--quota-backend-bytes=2147483648",
		}, etcdURL + "/health"},
		{compAPIServer, []string{bin("kube-apiserver"),
			"--etcd-servers=" + etcdURL,
			"--bind-address=" + gw, "--advertise-address=" + gw, "--secure-port=" + strconv.Itoa(c.APIServerPort),
			"--cert-dir=" + filepath.Join(c.StateDir, "apiserver-certs"),
			"--tls-cert-file=" + c.pkiPath(apiCert), "--tls-private-key-file=" + c.pkiPath(apiKey),
			"--client-ca-file=" + c.pkiPath(caCert),
			"--service-account-key-file=" + c.pkiPath(saPub), "--service-account-signing-key-file=" + c.pkiPath(saKey),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--authorization-mode=Node,RBAC", "--allow-privileged=true",
			"--service-cluster-ip-range=" + c.ServiceCIDR.String(),
			// No kube-proxy here: the apiserver reaches webhook and aggregated
			// API services through their endpoints (pod IP = node IP).
			"--enable-aggregator-routing=true",
			"--kubelet-client-certificate=" + c.pkiPath(kubeletCli+".crt"), "--kubelet-client-key=" + c.pkiPath(kubeletCli+".key"),
			"--kubelet-certificate-authority=" + c.pkiPath(caCert), "--kubelet-preferred-address-types=InternalIP",
		}, c.APIServerURL() + "/readyz"},
		{compKCM, []string{bin("kube-controller-manager"),
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--bind-address=" + gw, "--secure-port=" + strconv.Itoa(kcmPort), "--leader-elect=false",
			"--cert-dir=" + filepath.Join(c.StateDir, "kcm-certs"),
			"--service-account-private-key-file=" + c.pkiPath(saKey), "--root-ca-file=" + c.pkiPath(caCert),
			"--use-service-account-credentials=true",
			"--cluster-signing-cert-file=" + c.pkiPath(caCert), "--cluster-signing-key-file=" + c.pkiPath(caKey),
		}, hostPort(kcmPort)},
		{compScheduler, []string{bin("kube-scheduler"),
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--bind-address=" + gw, "--secure-port=" + strconv.Itoa(schedulerPort), "--leader-elect=false",
			"--cert-dir=" + filepath.Join(c.StateDir, "scheduler-certs"),
		}, hostPort(schedulerPort)},
	}
}

// startControlPlane starts every component that is not running (in the
// cluster's control-plane cgroup) and waits for each to be healthy.
func startControlPlane(ctx context.Context, c *Config, st *State, out func(string, ...any)) error {
	hc, err := c.healthClient()
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	for _, comp := range c.components() {
		if p, ok := st.Procs[comp.name]; ok && p.Alive() {
			out("%-24s running (pid %d)", comp.name, p.PID)
			continue
		}
		cg, err := subCgroup(c, "control-plane", comp.name)
		if err != nil {
			return err
		}
		t0 := time.Now()
		p, err := startDaemon(comp.argv, c.logPath(comp.name), cg, os.Environ())
		if err != nil {
			return err
		}
		st.Procs[comp.name] = p
		if err := st.save(); err != nil {
			return err
		}
		if err := waitHealthy(ctx, hc, comp.health, p, 2*time.Minute); err != nil {
			return fmt.Errorf("%s: %w (log: %s)\n%s", comp.name, err, p.Log, tailFile(p.Log, 15))
		}
		out("%-24s started in %.1fs (pid %d)", comp.name, time.Since(t0).Seconds(), p.PID)
	}
	return nil
}

// healthClient trusts the cluster CA and presents the admin certificate;
// KCM and scheduler serve self-signed certificates, which it accepts for
// their /healthz only (their addresses are this machine's bridge).
func (c *Config) healthClient() (*http.Client, error) {
	ca, err := os.ReadFile(c.pkiPath(caCert))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(c.pkiPath(adminCert), c.pkiPath(adminKey))
	if err != nil {
		return nil, err
	}
	strict := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
	gw := c.Gateway().String()
	tr := &http.Transport{DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := strict.Clone()
		host, port, _ := net.SplitHostPort(addr)
		if host == gw && (port == strconv.Itoa(kcmPort) || port == strconv.Itoa(schedulerPort)) {
			cfg.InsecureSkipVerify = true // self-signed serving certs of KCM and scheduler
		}
		cfg.ServerName = host
		d := tls.Dialer{Config: cfg}
		return d.DialContext(ctx, network, addr)
	}}
	return &http.Client{Transport: tr, Timeout: 3 * time.Second}, nil
}

// waitHealthy polls url every 200 ms until 200, the process dies, or timeout.
func waitHealthy(ctx context.Context, hc *http.Client, url string, p Proc, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if !p.Alive() {
			return fmt.Errorf("process %d exited", p.PID)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no 200 from %s within %v", url, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := splitLines(string(b))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
