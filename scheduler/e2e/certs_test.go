package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is what the chart's tls-secrets template generates, made here: one CA,
// the extender's serving certificate (for 127.0.0.1) and kube-scheduler's
// client certificate. schedulerDir holds ca.crt, tls.crt and tls.key, the
// file names the chart's scheduler config points at.
type pki struct {
	schedulerDir string
	caFile       string
	serverCert   string
	serverKey    string
	client       *tls.Config // for scraping the extender's HTTPS /metrics
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	caKey := mustKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "neighborly-e2e-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := mustKey(t)
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
			t.Fatal(err)
		}
		return der, key
	}
	serverDER, serverKey := issue(2, "neighborly-extender", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	clientDER, clientKey := issue(3, "neighborly-scheduler", x509.ExtKeyUsageClientAuth, nil)

	p := &pki{schedulerDir: filepath.Join(dir, "scheduler-tls")}
	if err := os.MkdirAll(p.schedulerDir, 0o700); err != nil {
		t.Fatal(err)
	}
	p.caFile = filepath.Join(p.schedulerDir, "ca.crt")
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	writePEM(t, filepath.Join(p.schedulerDir, "tls.crt"), "CERTIFICATE", clientDER)
	writePEM(t, filepath.Join(p.schedulerDir, "tls.key"), "EC PRIVATE KEY", mustMarshal(t, clientKey))
	p.serverCert = filepath.Join(dir, "extender.crt")
	p.serverKey = filepath.Join(dir, "extender.key")
	writePEM(t, p.serverCert, "CERTIFICATE", serverDER)
	writePEM(t, p.serverKey, "EC PRIVATE KEY", mustMarshal(t, serverKey))

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	p.client = &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}},
	}
	return p
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func mustMarshal(t *testing.T, key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
