package plugin

import (
	"context"
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

	"google.golang.org/grpc/credentials"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns PEM cert and key for a leaf (server: 127.0.0.1 SAN).
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// mTLS as the extender's placement port does it: the server requires a client
// certificate signed by its CA.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "neighborly-ca")
	srvCert, srvKey := ca.issue(t, "neighborly-extender", true)
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.cert)
	f := &fakePlacement{refused: map[string]string{"node-2": "l3 pressure"}}
	addr := serve(t, f, credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert,
	}))
	caFile := writeFile(t, dir, "ca.crt", ca.pem)

	cliCert, cliKey := ca.issue(t, "neighborly-scheduler", false)
	p := newPlugin(t, Args{Address: addr, CAFile: caFile,
		CertFile: writeFile(t, dir, "tls.crt", cliCert), KeyFile: writeFile(t, dir, "tls.key", cliKey)})
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, testPod(), nil); !st.IsSuccess() {
		t.Fatalf("PreFilter over mTLS: %v", st)
	}
	if st := p.Filter(context.Background(), state, testPod(), nodeInfo("node-2")); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("refusal did not arrive over mTLS: %v", st)
	}

	// A client certificate from another CA is refused by the server: the plugin
	// fails open and counts it.
	other := newCA(t, "someone-else")
	badCert, badKey := other.issue(t, "intruder", false)
	before := failOpenCount(t, "PreFilter", "unavailable")
	intruder := newPlugin(t, Args{Address: addr, CAFile: caFile,
		CertFile: writeFile(t, dir, "bad.crt", badCert), KeyFile: writeFile(t, dir, "bad.key", badKey)})
	if _, st := intruder.PreFilter(context.Background(), framework.NewCycleState(), testPod(), nil); st.Code() != fwk.Skip {
		t.Fatalf("a foreign client certificate must not get answers, got %v", st)
	}
	if got := failOpenCount(t, "PreFilter", "unavailable"); got != before+1 {
		t.Errorf("fail-open count %v, want %v", got, before+1)
	}
	if len(f.filters) != 1 {
		t.Errorf("the server answered %d filters, want only the authenticated one", len(f.filters))
	}
}

func TestBadKeyPairIsAStartupError(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "neighborly-ca")
	a := Args{Address: "127.0.0.1:1", CAFile: writeFile(t, dir, "ca.crt", ca.pem),
		CertFile: writeFile(t, dir, "tls.crt", []byte("not a cert")), KeyFile: writeFile(t, dir, "tls.key", []byte("x"))}
	a.SetDefaults()
	if _, err := NewWithArgs(a); err == nil {
		t.Fatal("a broken client key pair must fail at start-up, not at the first pod")
	}
}
