package backupstore

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/longhorn-go/longhorn/testbed/backuptarget"
)

// vhostDomain is the S3 server's virtual-host base domain in the tests. No
// resolver knows it: the requests reach the server through hostProxy.
const vhostDomain = "s3.test"

// hostProxy is a forward HTTP proxy (the credential's HTTP_PROXY) that
// sends every request for vhostDomain or one of its subdomains to the S3
// server at addr, unchanged: the Host header and the path the client built
// reach the server as they are, so the server alone decides which bucket a
// request addresses. It records each request's Host and path.
type hostProxy struct {
	addr string
	mu   sync.Mutex
	seen []string // "host path"
}

func (p *hostProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	if host != vhostDomain && !strings.HasSuffix(host, "."+vhostDomain) {
		http.Error(w, "hostProxy: unknown host "+r.Host, http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.seen = append(p.seen, r.Host+" "+r.URL.Path)
	p.mu.Unlock()
	rp := &httputil.ReverseProxy{Director: func(out *http.Request) {
		out.URL.Scheme, out.URL.Host = "http", p.addr // out.Host keeps the client's
	}}
	rp.ServeHTTP(w, r)
}

// take returns the requests seen since the last call.
func (p *hostProxy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.seen
	p.seen = nil
	return s
}

// vhostTarget starts versitygw with virtual-host addressing under
// vhostDomain (or without it when virtual is false) behind a hostProxy, and
// returns the target whose credential reaches it as
// http://s3.test:<port> through the proxy.
func vhostTarget(t *testing.T, virtual bool) (target, *hostProxy) {
	t.Helper()
	var srv *backuptarget.S3
	if virtual {
		srv = backuptarget.StartS3VirtualHost(t, "vh", vhostDomain)
	} else {
		srv = backuptarget.StartS3(t, "vh")
	}
	addr := strings.TrimPrefix(srv.Endpoint, "http://")
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	hp := &hostProxy{addr: addr}
	front := httptest.NewServer(hp)
	t.Cleanup(front.Close)
	cred := Credential{}
	for k, v := range srv.Credential {
		cred[k] = v
	}
	cred[AWSEndPoint] = "http://" + net.JoinHostPort(vhostDomain, port)
	cred[HTTPProxy] = front.URL
	return target{name: "s3-vhost", url: srv.URL, cred: cred, stop: srv.Stop,
		file: func(p string) string { return srv.ObjectPath("vh/" + p) }}, hp
}

// checkStyle fails unless every request went to wantHost with a path that
// starts with the bucket (path style) or does not (virtual-hosted style).
func checkStyle(t *testing.T, seen []string, wantHost string, bucketInPath bool) {
	t.Helper()
	if len(seen) == 0 {
		t.Fatal("no request went through the proxy")
	}
	for _, s := range seen {
		host, p, _ := strings.Cut(s, " ")
		if host != wantHost || strings.HasPrefix(p, "/longhorn-backups") != bucketInPath {
			t.Fatalf("request %q: want host %s, bucket in path %v", s, wantHost, bucketInPath)
		}
	}
}

// VIRTUAL_HOSTED_STYLE "true": every request names the bucket in the Host
// (longhorn-backups.s3.test:<port>) and never in the path, and a real S3
// server in virtual-host mode serves a whole backup cycle that way (backup,
// incremental backup, restores, a corrupted block named, deletion leaving
// no block). "false", and unset with a custom endpoint, use path style on
// s3.test:<port>. Control: the same virtual-hosted requests to a server
// without virtual-host mode fail to write (it reads the bucket from the
// path: PUT /vh/probe is bucket "vh"), so
// the cycle above passed because the server took the bucket from the Host.
func TestS3VirtualHostedStyle(t *testing.T) {
	tg, hp := vhostTarget(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port := tg.cred[AWSEndPoint][strings.LastIndex(tg.cred[AWSEndPoint], ":")+1:]
	tg.cred[VirtualHostedStyle] = "true"
	s, err := Open(ctx, tg.url, tg.cred, fastOpts())
	if err != nil {
		t.Fatalf("open with %s=true: %v", VirtualHostedStyle, err)
	}
	testBackupCycle(t, s, tg)
	s.Close()
	seen := hp.take()
	checkStyle(t, seen, "longhorn-backups."+vhostDomain+":"+port, false)
	sample := seen[0]
	for _, r := range seen {
		if strings.HasSuffix(r, ".blk") {
			sample = r
		}
	}
	t.Logf("virtual-hosted style: %d requests, e.g. %q", len(seen), sample)

	for _, v := range []string{"false", ""} {
		tg.cred[VirtualHostedStyle] = v
		s, err := Open(ctx, tg.url, tg.cred, fastOpts())
		if err != nil {
			t.Fatalf("open with %s=%q: %v", VirtualHostedStyle, v, err)
		}
		if _, err := s.ListVolumeNames(ctx); err != nil {
			t.Fatalf("%s=%q: list: %v", VirtualHostedStyle, v, err)
		}
		s.Close()
		checkStyle(t, hp.take(), vhostDomain+":"+port, true)
	}

	plain, _ := vhostTarget(t, false)
	plain.cred[VirtualHostedStyle] = "true"
	d, err := OpenDriver(ctx, plain.url, plain.cred)
	if err != nil { // its check lists "/" with a prefix: the server answers a bucket list, which parses
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write(ctx, "probe", strings.NewReader("x"), 1); err == nil {
		t.Fatal("a virtual-hosted write to a server without virtual-host mode succeeded; the test would prove nothing")
	} else {
		t.Logf("control, server without virtual-host mode: %v", err)
	}
}

// s3BucketLookup follows Longhorn's rule for VIRTUAL_HOSTED_STYLE and
// refuses values Longhorn would silently ignore.
func TestS3BucketLookup(t *testing.T) {
	for _, c := range []struct {
		style, endpoint string
		want            minio.BucketLookupType
	}{
		{"true", "", minio.BucketLookupDNS},
		{"true", "http://s3.test:9000", minio.BucketLookupDNS},
		{"false", "", minio.BucketLookupPath},
		{"false", "http://s3.test:9000", minio.BucketLookupPath},
		{"", "http://s3.test:9000", minio.BucketLookupPath},
		{"", "", minio.BucketLookupAuto},
	} {
		got, err := s3BucketLookup(Credential{VirtualHostedStyle: c.style, AWSEndPoint: c.endpoint})
		if err != nil || got != c.want {
			t.Errorf("%s=%q %s=%q: %v %v; want %v", VirtualHostedStyle, c.style, AWSEndPoint, c.endpoint, got, err, c.want)
		}
	}
	for _, v := range []string{"True", "yes", "1", "true\n"} {
		_, err := s3BucketLookup(Credential{VirtualHostedStyle: v})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), VirtualHostedStyle) {
			t.Errorf("%s=%q: %v; want ErrInvalid naming the key", VirtualHostedStyle, v, err)
		}
	}
}
