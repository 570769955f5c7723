package backupstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/testbed/backuptarget"
)

// selfSignedCert returns a TLS certificate for 127.0.0.1 and its PEM (the
// content of a credential Secret's AWS_CERT).
func selfSignedCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "backup test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// The S3 driver trusts the CA of the credential's AWS_CERT: versitygw behind
// a TLS front whose certificate only that CA signs. Without AWS_CERT the
// target is unavailable with the certificate error; a malformed AWS_CERT is
// refused naming the key. (HTTPS_PROXY cannot be tested here: Go's proxy
// rules never proxy loopback addresses, and the test servers are loopback.)
func TestS3CustomCA(t *testing.T) {
	srv := backuptarget.StartS3(t, "tls")
	up, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(up)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		host := r.Host // the signed Host header must reach the server
		director(r)
		r.Host = host
	}
	front := httptest.NewUnstartedServer(rp)
	cert, caPEM := selfSignedCert(t)
	front.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	front.StartTLS()
	defer front.Close()
	cred := Credential{}
	for k, v := range srv.Credential {
		cred[k] = v
	}
	cred[AWSEndPoint] = front.URL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Open(ctx, srv.URL, cred, fastOpts()); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("TLS target without AWS_CERT: %v; want ErrUnavailable naming the certificate", err)
	}
	cred[AWSCert] = "not a certificate"
	if _, err := Open(ctx, srv.URL, cred, fastOpts()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), AWSCert) {
		t.Fatalf("malformed AWS_CERT: %v; want ErrInvalid naming %s", err, AWSCert)
	}
	cred[AWSCert] = caPEM
	s, err := Open(ctx, srv.URL, cred, fastOpts())
	if err != nil {
		t.Fatalf("TLS target with AWS_CERT: %v", err)
	}
	defer s.Close()
	tg := target{name: "s3-tls", url: srv.URL, cred: cred, stop: srv.Stop,
		file: func(p string) string { return srv.ObjectPath("tls/" + p) }}
	testBackupCycle(t, s, tg)
}
