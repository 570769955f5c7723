package backuptarget

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NFS is a running nfs-ganesha server (NFSv3, VFS backend) exporting one
// directory, with its own rpcbind, inside a network namespace reached over
// a veth pair from the backup helper's subnet 10.99.72.0/24 (one /30 per
// server). The processes also get a private mount namespace with their own
// /run and /var/lib/nfs, so they share nothing with the host's daemons.
type NFS struct {
	// URL is the backup target URL, nfs://<addr>:<export>.
	URL string
	// Addr is the server's address (the namespace side of the veth pair).
	Addr string
	// Export is the exported directory (on this machine's file system).
	Export string
	netns  string
	dir    string
	cmd    *exec.Cmd
	logs   *bytes.Buffer
}

const nfsSubnet = "10.99.72."

// StartNFS starts the server and returns it. Needs root, ip, unshare,
// rpcbind and ganesha.nfsd.
func StartNFS(t testing.TB) *NFS {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping test that needs an NFS server")
	}
	for _, b := range []string{"ganesha.nfsd", "rpcbind", "ip", "unshare"} {
		if _, err := exec.LookPath(b); err != nil {
			missing(t, b, "apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind iproute2 util-linux")
		}
	}
	if os.Geteuid() != 0 {
		missing(t, "root", "the NFS test server needs network namespaces")
	}
	n := &NFS{dir: t.TempDir(), logs: &bytes.Buffer{}}
	n.Export = filepath.Join(n.dir, "export")
	if err := os.MkdirAll(n.Export, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	if err := n.network(); err != nil {
		t.Fatalf("NFS test server network: %v", err)
	}
	if err := n.start(); err != nil {
		t.Fatalf("start nfs-ganesha: %v", err)
	}
	n.URL = "nfs://" + n.Addr + ":" + n.Export
	return n
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// network creates the namespace and the veth pair on a free /30.
func (n *NFS) network() error {
	out, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	for attempt := 0; attempt < 20; attempt++ {
		k := 1 + rand.IntN(62)
		host, peer := fmt.Sprintf("%s%d", nfsSubnet, 4*k+1), fmt.Sprintf("%s%d", nfsSubnet, 4*k+2)
		if bytes.Contains(out, []byte(host+"/")) || bytes.Contains(out, []byte(peer+"/")) {
			continue
		}
		id := fmt.Sprintf("%04x", rand.IntN(1<<16))
		n.netns = "lhbak-nfs-" + id
		hv, nv := "lhbk"+id+"h", "lhbk"+id+"n"
		steps := [][]string{
			{"ip", "netns", "add", n.netns},
			{"ip", "link", "add", hv, "type", "veth", "peer", "name", nv, "netns", n.netns},
			{"ip", "addr", "add", host + "/30", "dev", hv},
			{"ip", "link", "set", hv, "up"},
			{"ip", "-n", n.netns, "link", "set", "lo", "up"},
			{"ip", "-n", n.netns, "addr", "add", peer + "/30", "dev", nv},
			{"ip", "-n", n.netns, "link", "set", nv, "up"},
		}
		for _, s := range steps {
			if err := run(s...); err != nil {
				return err
			}
		}
		// Never dial a test address unless it routes to our own veth.
		rt, err := exec.Command("ip", "route", "get", peer).Output()
		if err != nil || !bytes.Contains(rt, []byte("dev "+hv)) {
			return fmt.Errorf("route to %s does not use %s: %s", peer, hv, rt)
		}
		n.Addr = peer
		return nil
	}
	return fmt.Errorf("no free /30 in %s0/24", nfsSubnet)
}

const ganeshaConf = `NFS_CORE_PARAM {
  Protocols = 3;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Enable_UDP = false;
}
NFSV4 { Graceless = true; }
EXPORT {
  Export_Id = 1;
  Path = %[1]s;
  Pseudo = %[1]s;
  Access_Type = RW;
  Squash = No_Root_Squash;
  Protocols = 3;
  Transports = TCP;
  SecType = sys;
  FSAL { Name = VFS; }
}
`

// start runs rpcbind and ganesha.nfsd in the namespace, in one private
// mount namespace with tmpfs on /run and /var/lib/nfs.
func (n *NFS) start() error {
	conf := filepath.Join(n.dir, "ganesha.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(ganeshaConf, n.Export)), 0o644); err != nil {
		return err
	}
	script := strings.Join([]string{
		"set -e",
		"mount -t tmpfs tmpfs /run",
		"mount -t tmpfs tmpfs /var/lib/nfs",
		"mkdir -p /run/rpcbind /var/lib/nfs/ganesha",
		"rpcbind -f &",
		"for i in $(seq 50); do [ -S /run/rpcbind.sock ] && break; sleep 0.1; done",
		"exec ganesha.nfsd -F -L " + filepath.Join(n.dir, "ganesha.log") + " -f " + conf + " -p " + filepath.Join(n.dir, "ganesha.pid"),
	}, "\n")
	n.cmd = exec.Command("ip", "netns", "exec", n.netns, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	n.cmd.Stdout, n.cmd.Stderr = n.logs, n.logs
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("ganesha exited: %s %s", n.logs.String(), n.log())
		default:
		}
		if ready(n.Addr) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after 60s: %s", n.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ready reports whether portmapper and NFS accept connections and the
// MOUNT service (program 100005) is registered with the portmapper: ganesha
// opens 2049 before it registers MOUNT, and a client that asks the
// portmapper in between gets port 0 ("MOUNT service: dial ...:0").
func ready(addr string) bool {
	for _, p := range []string{"111", "2049"} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, p), time.Second)
		if err != nil {
			return false
		}
		c.Close()
	}
	if _, err := exec.LookPath("rpcinfo"); err != nil {
		return true
	}
	return exec.Command("rpcinfo", "-T", "tcp", addr, "100005", "3").Run() == nil
}

func (n *NFS) log() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "ganesha.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop kills the server now (a test of an unreachable target); Cleanup does
// it too, and removes the namespace.
func (n *NFS) Stop() { n.kill() }

func (n *NFS) kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(n.cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	n.cmd = nil
}

func (n *NFS) stop() {
	n.kill()
	if n.netns != "" {
		// Processes left in the namespace (none expected) would keep it alive.
		if out, err := exec.Command("ip", "netns", "pids", n.netns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		_ = run("ip", "netns", "del", n.netns)
		n.netns = ""
	}
}
