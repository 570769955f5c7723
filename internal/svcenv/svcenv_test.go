package svcenv

import (
	"context"
	"net"
	"testing"
)

func TestHost(t *testing.T) {
	env := map[string]string{"LONGHORN_BACKEND_SERVICE_HOST": "10.43.0.7"}
	get := func(k string) string { return env[k] }
	for in, want := range map[string]string{
		"longhorn-backend:9500":      "10.43.0.7:9500",
		"longhorn-backend":           "10.43.0.7",
		"longhorn-frontend:80":       "longhorn-frontend:80",
		"longhorn-backend.ns.svc:80": "longhorn-backend.ns.svc:80",
		"10.0.0.1:9500":              "10.0.0.1:9500",
		"[::1]:9500":                 "[::1]:9500",
		"":                           "",
	} {
		if got := Host(in, get); got != want {
			t.Errorf("Host(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDialerFallsBackOnDNSError: a name that does not resolve is dialed at
// its <NAME>_SERVICE_HOST address; other errors are returned as they are.
func TestDialerFallsBackOnDNSError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	t.Setenv("LH_SVCENV_TEST_SERVICE_HOST", "127.0.0.1")
	var dialed []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		if addr == "lh-svcenv-test:"+port {
			return nil, &net.DNSError{Err: "no such host", Name: "lh-svcenv-test", IsNotFound: true}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	c, err := Dialer(dial)(context.Background(), "tcp", "lh-svcenv-test:"+port)
	if err != nil {
		t.Fatalf("dial through the service environment: %v (dialed %v)", err, dialed)
	}
	c.Close()
	if len(dialed) != 2 || dialed[1] != "127.0.0.1:"+port {
		t.Fatalf("dialed %v, want the name then 127.0.0.1:%s", dialed, port)
	}
	dialed = nil
	if _, err := Dialer(dial)(context.Background(), "tcp", "unknown-svc:"+port); err == nil || len(dialed) != 1 {
		t.Fatalf("a name without an environment address: err %v, dialed %v", err, dialed)
	}
}
