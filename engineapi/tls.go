package engineapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
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
// The files are read again for a new connection once they changed (the
// kubelet swaps a rotated Secret's files in place), so a rotated
// certificate or CA takes no restart; files that no longer parse leave the
// last good ones in use.
func ServerTLSFromDir(dir string) (*tls.Config, error) {
	d := &dirTLS{dir: dir}
	cfg, err := d.load()
	if err != nil || cfg == nil {
		return nil, err
	}
	d.cfg, d.stamp = cfg, d.fileStamp()
	return &tls.Config{GetConfigForClient: d.forClient, MinVersion: tls.VersionTLS12}, nil
}

// dirTLS is the reloading server configuration of ServerTLSFromDir.
type dirTLS struct {
	dir   string
	mu    sync.Mutex
	stamp string // size, mtime and inode of the three files when cfg was loaded
	cfg   *tls.Config
}

func (d *dirTLS) load() (*tls.Config, error) {
	ca, cert, key, err := readTLSFiles(d.dir)
	if err != nil || ca == nil {
		return nil, err
	}
	pair, pool, err := parseTLS(ca, cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.dir, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}, nil
}

// fileStamp identifies the current files (following the Secret volume's symlinks).
func (d *dirTLS) fileStamp() string {
	var b strings.Builder
	for _, name := range []string{TLSCAFile, TLSCertFile, TLSKeyFile} {
		if fi, err := os.Stat(filepath.Join(d.dir, name)); err == nil {
			fmt.Fprintf(&b, "%d/%d/%v;", fi.Size(), fi.ModTime().UnixNano(), fi.Sys())
		}
	}
	return b.String()
}

// forClient returns the configuration for one new connection, reloaded
// when the files changed.
func (d *dirTLS) forClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.fileStamp(); st != d.stamp {
		cfg, err := d.load()
		switch {
		case err != nil || cfg == nil:
			logrus.WithError(err).Warnf("TLS files in %s changed but cannot be used; keeping the previous certificates", d.dir)
		default:
			logrus.Infof("TLS files in %s changed: certificates reloaded", d.dir)
			d.cfg = cfg
		}
		d.stamp = st
	}
	return d.cfg, nil
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
