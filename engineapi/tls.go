package engineapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Mutual TLS between the manager and its instance managers, as Longhorn
// sets it up with the Secret longhorn-grpc-tls: when the Secret exists, the
// instance manager serves its process, instance and proxy services over
// TLS, requiring a client certificate signed by ca.crt, and the manager
// dials with tls.crt/tls.key and verifies the server against ca.crt;
// without it both sides speak plaintext.
const (
	// TLSSecretName is the Secret holding the certificates.
	TLSSecretName = "longhorn-grpc-tls"
	// TLSDir is where the instance-manager pod mounts the Secret.
	TLSDir = "/tls-files"
	// TLSCAFile, TLSCertFile and TLSKeyFile are the Secret's keys (and file
	// names under TLSDir).
	TLSCAFile   = "ca.crt"
	TLSCertFile = "tls.crt"
	TLSKeyFile  = "tls.key"
	// TLSServerName is the name the manager verifies in an instance
	// manager's certificate (Longhorn's longhorn-backend); the certificate's
	// subject alternative names must include it.
	TLSServerName = "longhorn-backend"
)

// ServerTLSFromDir loads the instance manager's TLS configuration from
// dir's ca.crt, tls.crt and tls.key: client certificates signed by ca.crt
// are required. It returns nil (plaintext) when dir is "" or holds none of
// the files, and an error when only some are there or they do not parse.
func ServerTLSFromDir(dir string) (*tls.Config, error) {
	ca, cert, key, err := readTLSFiles(dir)
	if err != nil || ca == nil {
		return nil, err
	}
	pair, pool, err := parseTLS(ca, cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS is the manager's TLS configuration from the Secret's data:
// tls.crt/tls.key as its client certificate, ca.crt to verify
// TLSServerName in the instance manager's certificate.
func ClientTLS(ca, cert, key []byte) (*tls.Config, error) {
	pair, pool, err := parseTLS(ca, cert, key)
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", TLSSecretName, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: TLSServerName,
		MinVersion: tls.VersionTLS12}, nil
}

func readTLSFiles(dir string) (ca, cert, key []byte, err error) {
	if dir == "" {
		return nil, nil, nil, nil
	}
	var data [3][]byte
	found := 0
	for i, name := range []string{TLSCAFile, TLSCertFile, TLSKeyFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		data[i] = b
		found++
	}
	switch found {
	case 0:
		return nil, nil, nil, nil
	case 3:
		return data[0], data[1], data[2], nil
	}
	return nil, nil, nil, fmt.Errorf("%s: needs all of %s, %s and %s", dir, TLSCAFile, TLSCertFile, TLSKeyFile)
}

func parseTLS(ca, cert, key []byte) (tls.Certificate, *x509.CertPool, error) {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("%s/%s: %w", TLSCertFile, TLSKeyFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return tls.Certificate{}, nil, fmt.Errorf("%s: no PEM certificate", TLSCAFile)
	}
	return pair, pool, nil
}
