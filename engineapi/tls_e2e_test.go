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
	if cfg, err := ServerTLSFromDir(dir); err != nil || cfg == nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("all files: %v %v", cfg, err)
	}
	_ = os.Remove(filepath.Join(dir, TLSKeyFile))
	if _, err := ServerTLSFromDir(dir); err == nil {
		t.Error("two of three files accepted")
	}
	if _, err := ClientTLS([]byte("not pem"), pki.cert, pki.key); err == nil {
		t.Error("a bad ca.crt accepted")
	}
}
