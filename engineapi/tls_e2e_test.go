package engineapi

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testpki"
)

// testPKI is a CA and one certificate it signed for TLSServerName, PEM.
type testPKI struct{ ca, cert, key []byte }

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	ca, cert, key, err := testpki.New(TLSServerName)
	if err != nil {
		t.Fatal(err)
	}
	return testPKI{ca: ca, cert: cert, key: key}
}

// writeDir writes the PKI as the Secret's files.
func (p testPKI) writeDir(t *testing.T) string {
	dir := t.TempDir()
	for name, b := range map[string][]byte{TLSCAFile: p.ca, TLSCertFile: p.cert, TLSKeyFile: p.key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMutualTLSWithInstanceManager: an instance manager whose --tls-dir
// holds the longhorn-grpc-tls files serves its instance service and proxy
// over mutual TLS: a client with the certificate negotiates the versions
// and pings the proxy; a plaintext client, and a TLS client that verifies
// the server but has no certificate of its own, are refused.
func TestMutualTLSWithInstanceManager(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	pki := newTestPKI(t)
	im := startRealIM(t, 10, "--tls-dir", pki.writeDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := ClientTLS(pki.ca, pki.cert, pki.key)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(HandlerOptions{TLS: cfg})
	defer h.Close()
	im.connect(t, ctx, h)
	if v, err := h.Ping(ctx, im.addr); err != nil || !ProxySupported(v) {
		t.Fatalf("ping over mutual TLS: %+v %v", v, err)
	}
	noCert := cfg.Clone()
	noCert.Certificates = nil
	for name, c := range map[string]*tls.Config{"plaintext": nil, "TLS without a client certificate": noCert} {
		other := NewHandler(HandlerOptions{TLS: c, CheckTimeout: 2 * time.Second})
		if _, err := other.InstanceManager(ctx, im.addr); err == nil {
			t.Errorf("%s client: accepted by an instance manager serving mutual TLS", name)
		} else {
			t.Logf("%s client refused: %v", name, err)
		}
		other.Close()
	}
}

// TestServerTLSFromDir: no directory or no files is plaintext (nil), all
// three files a mutual-TLS configuration, some of them or a bad PEM an error.
func TestServerTLSFromDir(t *testing.T) {
	pki := newTestPKI(t)
	for _, dir := range []string{"", t.TempDir(), filepath.Join(t.TempDir(), "absent")} {
		if cfg, err := ServerTLSFromDir(dir); cfg != nil || err != nil {
			t.Errorf("%q: %v %v, want plaintext", dir, cfg, err)
		}
	}
	dir := pki.writeDir(t)
	cfg, err := ServerTLSFromDir(dir)
	if err != nil || cfg == nil {
		t.Fatalf("all files: %v %v", cfg, err)
	}
	if c, err := cfg.GetConfigForClient(nil); err != nil || c.ClientAuth != tls.RequireAndVerifyClientCert || len(c.Certificates) != 1 {
		t.Fatalf("per-connection configuration: %+v %v", c, err)
	}
	_ = os.Remove(filepath.Join(dir, TLSKeyFile))
	if _, err := ServerTLSFromDir(dir); err == nil {
		t.Error("two of three files accepted")
	}
	if _, err := ClientTLS([]byte("not pem"), pki.cert, pki.key); err == nil {
		t.Error("a bad ca.crt accepted")
	}
}

// swapFiles replaces dir's Secret files by p's the way the kubelet updates a
// Secret volume: new files renamed over the old ones.
func (p testPKI) swapFiles(t *testing.T, dir string) {
	t.Helper()
	for name, b := range map[string][]byte{TLSCAFile: p.ca, TLSCertFile: p.cert, TLSKeyFile: p.key} {
		tmp := filepath.Join(dir, "."+name+".new")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTLSRotationWithoutRestart: the longhorn-grpc-tls files of a running
// instance manager are replaced by a new CA and certificate; the manager's
// handler gets the new Secret (SetTLS) and reaches the same instance
// manager process again over mutual TLS, while a client still holding the
// old certificate is refused. A broken file set keeps the last good one.
func TestTLSRotationWithoutRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	oldPKI, newPKI := newTestPKI(t), newTestPKI(t)
	dir := oldPKI.writeDir(t)
	im := startRealIM(t, 10, "--tls-dir", dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	oldCfg, err := ClientTLS(oldPKI.ca, oldPKI.cert, oldPKI.key)
	if err != nil {
		t.Fatal(err)
	}
	newCfg, err := ClientTLS(newPKI.ca, newPKI.cert, newPKI.key)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(HandlerOptions{TLS: oldCfg})
	defer h.Close()
	im.connect(t, ctx, h)
	_, dials := h.Connections()
	newPKI.swapFiles(t, dir)
	h.SetTLS(newCfg)
	if _, err := h.Ping(ctx, im.addr); err != nil {
		t.Fatalf("ping with the rotated certificates: %v", err)
	}
	if _, d := h.Connections(); d != dials+1 {
		t.Fatalf("dials %d -> %d, want one re-dial after SetTLS", dials, d)
	}
	stale := NewHandler(HandlerOptions{TLS: oldCfg, CheckTimeout: 2 * time.Second})
	defer stale.Close()
	if _, err := stale.InstanceManager(ctx, im.addr); err == nil {
		t.Fatal("a client with the replaced certificate was accepted")
	}
	if err := os.WriteFile(filepath.Join(dir, TLSCertFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	again := NewHandler(HandlerOptions{TLS: newCfg})
	defer again.Close()
	if _, err := again.Ping(ctx, im.addr); err != nil {
		t.Fatalf("after a broken tls.crt the last good certificates must stay: %v", err)
	}
}
