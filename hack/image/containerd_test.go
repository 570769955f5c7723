package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeToolChecks: for every package of package/node-packages.txt, a shell
// command that proves it is usable inside the image. A package added to the
// list without a check here fails TestImageRunsUnderContainerd.
var nodeToolChecks = map[string]string{
	"ca-certificates": "test -s /etc/ssl/certs/ca-certificates.crt",
	"iproute2":        "ip -V",
	"e2fsprogs":       "mkfs.ext4 -V",
	"xfsprogs":        "mkfs.xfs -V",
	"nfs-common":      "test -x /sbin/mount.nfs",
	"util-linux":      "losetup --version && nsenter --version && blkid -V",
	"mount":           "mount --version",
	"open-iscsi":      "iscsiadm --version",
	"nbd-client":      "command -v nbd-client",
	"cryptsetup-bin":  "cryptsetup --version",
	"dmsetup":         "command -v dmsetup",
	"kmod":            "modprobe --version",
	"procps":          "ps --version",
}

// TestImageRunsUnderContainerd imports the archive of `make image`
// (LONGHORN_IMAGE_ARCHIVE, named LONGHORN_IMAGE_REF) into a containerd of
// its own, checks the name the kubelet will look up, and runs
// `longhorn --version` and the node tools in a container (runc). make
// test-image runs it; without the variables it skips.
func TestImageRunsUnderContainerd(t *testing.T) {
	archive, ref := os.Getenv("LONGHORN_IMAGE_ARCHIVE"), os.Getenv("LONGHORN_IMAGE_REF")
	if archive == "" || ref == "" {
		t.Skip("LONGHORN_IMAGE_ARCHIVE/LONGHORN_IMAGE_REF not set (make test-image sets them)")
	}
	requireTools(t, "containerd", "ctr", "runc")
	full, tag, err := NormalizeRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sock := startContainerd(ctx, t)
	ctr := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ctr("images", "import", archive)
	if names := ctr("images", "ls", "-q"); !strings.Contains(names, full+"\n") {
		t.Fatalf("after import the images are %q, want %s", names, full)
	}
	if out := ctr("run", "--rm", full, "lhimg-version", "longhorn", "--version"); !strings.Contains(out, "longhorn version "+tag) {
		t.Errorf("longhorn --version in the image: %q, want version %s", out, tag)
	}
	script := toolScript(t, repoPackages(t))
	out := ctr("run", "--rm", full, "lhimg-tools", "sh", "-c", script)
	if !strings.Contains(out, "all node tools ok") {
		t.Errorf("node tools: %s", out)
	}
	t.Logf("node tools in %s:\n%s", full, out)
}

// toolScript is a shell script that runs the check of every package and
// fails at the first that does not pass.
func toolScript(t *testing.T, pkgs []string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("set -e\n")
	sort.Strings(pkgs)
	for _, p := range pkgs {
		c, ok := nodeToolChecks[p]
		if !ok {
			t.Errorf("package %s of package/node-packages.txt has no check in nodeToolChecks", p)
			continue
		}
		fmt.Fprintf(&b, "echo '== %s: %s'; %s\n", p, c, c)
	}
	b.WriteString("echo all node tools ok\n")
	return b.String()
}

func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("LONGHORN_REQUIRE_TOOLS") == "1" {
				t.Fatalf("%s not found (apt-get install containerd runc)", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
}

// startContainerd runs a containerd with private root, state and socket
// (the CRI plugin off) and stops it, its shims and its mounts at cleanup.
func startContainerd(ctx context.Context, t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lhimg-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "containerd.sock")
	cfg := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
		unmountUnder(t, dir)
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("containerd log (tail):\n%s", tail(string(b), 30))
			}
		}
		_ = os.RemoveAll(dir)
	})
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		select {
		case <-ctx.Done():
			t.Fatalf("containerd did not listen on %s", sock)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mps = append(mps, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mps)))
	for _, mp := range mps {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mp, err)
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
