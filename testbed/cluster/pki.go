package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI file names under <StateDir>/pki.
const (
	caCert     = "ca.crt"
	caKey      = "ca.key"
	apiCert    = "apiserver.crt"
	apiKey     = "apiserver.key"
	adminCert  = "admin.crt"
	adminKey   = "admin.key"
	saKey      = "sa.key" // RSA, PKCS#1: signs service-account tokens
	saPub      = "sa.pub"
	kubeletCli = "kubelet-client" // apiserver -> node agent client cert
	// kubeProxyCert is kube-proxy's client certificate (user
	// system:kube-proxy, bound to system:node-proxier by default RBAC).
	kubeProxyCert = "kube-proxy"
)

func (c *Config) pkiPath(name string) string { return filepath.Join(c.StateDir, "pki", name) }

// EnsurePKI creates the cluster CA and every certificate the control plane
// and node agents need, unless they already exist (re-running keeps them,
// so existing kubeconfigs stay valid). Certificates are valid 10 years.
func EnsurePKI(c *Config) error {
	dir := filepath.Join(c.StateDir, "pki")
	if _, err := os.Stat(filepath.Join(dir, saPub)); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, caPriv, err := newCA()
	if err != nil {
		return err
	}
	if err := writeCert(c.pkiPath(caCert), c.pkiPath(caKey), ca, caPriv); err != nil {
		return err
	}
	api := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IP(c.Gateway().AsSlice()), net.IP(c.ServiceIP().AsSlice())},
	}
	if err := issue(c.pkiPath(apiCert), c.pkiPath(apiKey), api, ca, caPriv); err != nil {
		return err
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := issue(c.pkiPath(adminCert), c.pkiPath(adminKey), admin, ca, caPriv); err != nil {
		return err
	}
	kc := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := issue(c.pkiPath(kubeletCli+".crt"), c.pkiPath(kubeletCli+".key"), kc, ca, caPriv); err != nil {
		return err
	}
	for i := 1; i <= c.Nodes; i++ {
		if err := issueNodeServing(c, i, ca, caPriv); err != nil {
			return err
		}
	}
	return writeSAKeys(c)
}

// ensureNodeCerts issues what is missing of: serving certificates for nodes
// added by a re-run with a larger node count, the kubelets' client
// certificates (user system:node:NAME in group system:nodes, for the Node
// authorizer) and kube-proxy's.
func ensureNodeCerts(c *Config) error {
	ca, caPriv, err := loadCA(c)
	if err != nil {
		return err
	}
	for i := 1; i <= c.Nodes; i++ {
		if _, err := os.Stat(c.pkiPath(c.NodeName(i) + ".crt")); err != nil {
			if err := issueNodeServing(c, i, ca, caPriv); err != nil {
				return err
			}
		}
		if _, err := os.Stat(c.pkiPath(c.NodeName(i) + "-client.crt")); err != nil {
			t := &x509.Certificate{
				Subject:     pkix.Name{CommonName: "system:node:" + c.NodeName(i), Organization: []string{"system:nodes"}},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}
			if err := issue(c.pkiPath(c.NodeName(i)+"-client.crt"), c.pkiPath(c.NodeName(i)+"-client.key"), t, ca, caPriv); err != nil {
				return err
			}
		}
	}
	if _, err := os.Stat(c.pkiPath(kubeProxyCert + ".crt")); err == nil {
		return nil
	}
	t := &x509.Certificate{Subject: pkix.Name{CommonName: "system:kube-proxy"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	return issue(c.pkiPath(kubeProxyCert+".crt"), c.pkiPath(kubeProxyCert+".key"), t, ca, caPriv)
}

func issueNodeServing(c *Config, i int, ca *x509.Certificate, caPriv *ecdsa.PrivateKey) error {
	t := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + c.NodeName(i), Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{c.NodeName(i)},
		IPAddresses: []net.IP{net.IP(c.NodeIP(i).AsSlice())},
	}
	return issue(c.pkiPath(c.NodeName(i)+".crt"), c.pkiPath(c.NodeName(i)+".key"), t, ca, caPriv)
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	t := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "longhorn-local-cluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, t, t, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, priv, err
}

func loadCA(c *Config) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(c.pkiPath(caCert))
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(c.pkiPath(caKey))
	if err != nil {
		return nil, nil, err
	}
	cblk, _ := pem.Decode(cb)
	kblk, _ := pem.Decode(kb)
	if cblk == nil || kblk == nil {
		return nil, nil, errors.New("cluster CA: bad PEM in " + filepath.Dir(c.pkiPath(caCert)))
	}
	ca, err := x509.ParseCertificate(cblk.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kblk.Bytes)
	return ca, key, err
}

func issue(certPath, keyPath string, t, ca *x509.Certificate, caPriv *ecdsa.PrivateKey) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	t.SerialNumber = serial()
	t.NotBefore = time.Now().Add(-time.Hour)
	t.NotAfter = time.Now().AddDate(10, 0, 0)
	t.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, t, ca, &priv.PublicKey, caPriv)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	return writeCert(certPath, keyPath, cert, priv)
}

func writeCert(certPath, keyPath string, cert *x509.Certificate, priv *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

func writeSAKeys(c *Config) error {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.pkiPath(saKey), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(priv)}), 0o600); err != nil {
		return err
	}
	// Written last: its presence marks a complete PKI (see EnsurePKI).
	return os.WriteFile(c.pkiPath(saPub), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the kernel RNG does not fail
	}
	return n
}

// WriteKubeconfig writes an admin kubeconfig (client certificate, CA and
// server URL inline paths) to path.
func WriteKubeconfig(c *Config, path string) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority: %[3]s
users:
- name: %[1]s-admin
  user:
    client-certificate: %[4]s
    client-key: %[5]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s-admin
current-context: %[1]s
`, "longhorn-"+c.Name, c.APIServerURL(), c.pkiPath(caCert), c.pkiPath(adminCert), c.pkiPath(adminKey))
	return os.WriteFile(path, []byte(kc), 0o600)
}
