// Package testpki makes what the chart's tls-secrets template generates, for
// tests and benchmarks on loopback: one CA, the extender's serving
// certificate (for 127.0.0.1) and kube-scheduler's client certificate, written
// as the files the chart's scheduler configuration names (ca.crt, tls.crt,
// tls.key in SchedulerDir).
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SchedulerName is the common name of kube-scheduler's client certificate:
// the name the extender's scheduler and placement ports require of their
// clients (http.tls.allowedClientNames, placement.tls.allowedClientNames), as
// the chart sets them for its own certificates.
const SchedulerName = "neighborly-scheduler"

// PKI is the set of files New wrote.
type PKI struct {
	// SchedulerDir holds ca.crt, tls.crt and tls.key: the directory the
	// chart mounts at /etc/neighborly-tls in the scheduler pod.
	SchedulerDir string
	CAFile       string
	ServerCert   string // the extender's serving certificate (IP SAN 127.0.0.1)
	ServerKey    string
	// Client presents the scheduler's client certificate and trusts the CA
	// (for scraping the extender's HTTPS endpoints).
	Client *tls.Config
}

// New writes a fresh CA and certificates valid for 24 hours under dir.
func New(dir string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "neighborly-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate %s: %w", cn, err)
		}
		return der, key, nil
	}
	serverDER, serverKey, err := issue(2, "neighborly-extender", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return nil, err
	}
	clientDER, clientKey, err := issue(3, SchedulerName, x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return nil, err
	}

	p := &PKI{
		SchedulerDir: filepath.Join(dir, "scheduler-tls"),
		ServerCert:   filepath.Join(dir, "extender.crt"),
		ServerKey:    filepath.Join(dir, "extender.key"),
	}
	p.CAFile = filepath.Join(p.SchedulerDir, "ca.crt")
	if err := os.MkdirAll(p.SchedulerDir, 0o700); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path, kind string
		der        []byte
		key        *ecdsa.PrivateKey
	}{
		{path: p.CAFile, kind: "CERTIFICATE", der: caDER},
		{path: filepath.Join(p.SchedulerDir, "tls.crt"), kind: "CERTIFICATE", der: clientDER},
		{path: filepath.Join(p.SchedulerDir, "tls.key"), kind: "EC PRIVATE KEY", key: clientKey},
		{path: p.ServerCert, kind: "CERTIFICATE", der: serverDER},
		{path: p.ServerKey, kind: "EC PRIVATE KEY", key: serverKey},
	} {
		der := f.der
		if f.key != nil {
			if der, err = x509.MarshalECPrivateKey(f.key); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: der}), 0o600); err != nil {
			return nil, err
		}
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	p.Client = &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}},
	}
	return p, nil
}
