// Package backuptarget starts the real backup targets the backup tests use:
// an S3 server (versitygw, posix backend, built from the Go module proxy by
// `make testbin-backup`) on loopback, and nfs-ganesha (Debian's package) with
// rpcbind inside a network namespace the test creates. Each server lives for
// one test and is stopped, with everything it made, by t.Cleanup.
//
// Missing programs skip the test, or fail it under `make test`
// (LONGHORN_REQUIRE_TOOLS=1); -short skips it.
package backuptarget

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// S3 is a running S3 server with one bucket.
type S3 struct {
	// URL is the backup target URL, s3://<bucket>@us-east-1/<prefix>/.
	URL string
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// Credential is the credential Secret's content (Longhorn's keys).
	Credential map[string]string
	Bucket     string
	AccessKey  string
	SecretKey  string
	// Root is the directory holding the bucket's objects (a test may corrupt
	// one there).
	Root string
	cmd  *exec.Cmd
	logs *bytes.Buffer
}

const (
	s3Bucket = "longhorn-backups"
	s3Access = "longhorn-test-access"
	s3Secret = "longhorn-test-secret-key"
)

// versitygwPath finds the server: $LONGHORN_VERSITYGW, the test bed cache,
// or PATH.
func versitygwPath() string {
	if p := os.Getenv("LONGHORN_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(home, ".cache", "longhorn-testbed", "versitygw-*", "versitygw"))
		if len(m) > 0 {
			return m[len(m)-1]
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}

func missing(t testing.TB, what, hint string) {
	t.Helper()
	if testutil.ToolsRequired() {
		t.Fatalf("%s not found (%s)", what, hint)
	}
	t.Skipf("%s not found (%s)", what, hint)
}

// StartS3 starts versitygw on a free loopback port with a fresh bucket and
// returns it; prefix is the key prefix of the target URL ("" for none).
func StartS3(t testing.TB, prefix string) *S3 {
	t.Helper()
	return startS3Test(t, prefix, "")
}

// StartS3VirtualHost is StartS3 with versitygw's virtual-host bucket
// addressing on (--virtual-domain domain): a request whose Host is
// <bucket>.<domain>[:port] addresses that bucket, and path-style requests
// keep working. Nothing resolves the domain: the test routes the requests
// (e.g. through an HTTP proxy). The Credential stays path-style on
// Endpoint.
func StartS3VirtualHost(t testing.TB, prefix, domain string) *S3 {
	t.Helper()
	if domain == "" {
		t.Fatal("StartS3VirtualHost: empty domain")
	}
	return startS3Test(t, prefix, domain)
}

func startS3Test(t testing.TB, prefix, domain string) *S3 {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping test that needs an S3 server")
	}
	bin := versitygwPath()
	if bin == "" {
		missing(t, "versitygw", "run make testbin-backup, or set LONGHORN_VERSITYGW")
	}
	s, err := startS3Server(bin, t.TempDir(), prefix, "127.0.0.1", domain)
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// FindVersitygw returns the path of the S3 server binary ("" if missing).
func FindVersitygw() string { return versitygwPath() }

// StartS3Server starts versitygw (binary bin) on a free loopback port,
// storing objects under root, for programs that are not tests (the
// benchmark); the caller calls Stop.
func StartS3Server(bin, root, prefix string) (*S3, error) {
	return StartS3ServerOn(bin, root, prefix, "127.0.0.1")
}

// StartS3ServerOn is StartS3Server listening on host (an address of this
// machine, e.g. a test cluster's bridge gateway, so that pods reach it).
func StartS3ServerOn(bin, root, prefix, host string) (*S3, error) {
	return startS3Server(bin, root, prefix, host, "")
}

// startS3Server starts versitygw on a free port of host; a non-empty
// virtualDomain turns on virtual-host bucket addressing under that domain.
func startS3Server(bin, root, prefix, host, virtualDomain string) (*S3, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		s, err := startS3(bin, root, host, port, virtualDomain)
		if err == nil {
			s.URL = "s3://" + s3Bucket + "@us-east-1/"
			if prefix != "" {
				s.URL += prefix + "/"
			}
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startS3(bin, root, host string, port int, virtualDomain string) (*S3, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	s := &S3{Endpoint: "http://" + addr, Bucket: s3Bucket, AccessKey: s3Access,
		SecretKey: s3Secret, Root: root, logs: &bytes.Buffer{}}
	s.Credential = map[string]string{"AWS_ACCESS_KEY_ID": s3Access, "AWS_SECRET_ACCESS_KEY": s3Secret, "AWS_ENDPOINTS": s.Endpoint}
	args := []string{"--access", s3Access, "--secret", s3Secret, "--region", "us-east-1", "--port", addr, "--quiet"}
	if virtualDomain != "" {
		args = append(args, "--virtual-domain", virtualDomain)
	}
	s.cmd = exec.Command(bin, append(args, "posix", root)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("versitygw exited: %s", s.logs.String())
		default:
		}
		if err := s.makeBucket(); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("versitygw on port %d not ready: %v: %s", port, err, s.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns a minio-go client for the server.
func (s *S3) Client() (*minio.Client, error) {
	return minio.New(s.Endpoint[len("http://"):], &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
}

func (s *S3) makeBucket() error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := net.DialTimeout("tcp", s.Endpoint[len("http://"):], time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	if ok, err := c.BucketExists(ctx, s3Bucket); err == nil && ok {
		return nil
	}
	return c.MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
}

// ObjectPath returns the file holding an object key (posix backend).
func (s *S3) ObjectPath(key string) string {
	return filepath.Join(s.Root, s.Bucket, filepath.FromSlash(key))
}

// Stop kills the server now (a test of an unreachable target); Cleanup does
// it too.
func (s *S3) Stop() { s.stop() }

func (s *S3) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(s.cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}
