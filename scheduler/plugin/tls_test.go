package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/credentials"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"neighborly.dev/scheduler/internal/testpki"
)

func newTestPKI(t *testing.T) *testpki.PKI {
	t.Helper()
	p, err := testpki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
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
	pki := newTestPKI(t)
	pair, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	caPEM, err := os.ReadFile(pki.CAFile)
	if err != nil || !clientCAs.AppendCertsFromPEM(caPEM) {
		t.Fatalf("CA: %v", err)
	}
	f := &fakePlacement{refused: map[string]string{"node-2": "l3 pressure"}}
	addr := serve(t, f, credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert,
	}))

	p := newPlugin(t, Args{Address: addr, CAFile: pki.CAFile,
		CertFile: filepath.Join(pki.SchedulerDir, "tls.crt"), KeyFile: filepath.Join(pki.SchedulerDir, "tls.key")})
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, testPod(), nil); !st.IsSuccess() {
		t.Fatalf("PreFilter over mTLS: %v", st)
	}
	if st := p.Filter(context.Background(), state, testPod(), nodeInfo("node-2")); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("refusal did not arrive over mTLS: %v", st)
	}

	// A client certificate from another CA is refused by the server: the plugin
	// fails open and counts it.
	other := newTestPKI(t)
	before := failOpenCount(t, "PreFilter", "unavailable")
	intruder := newPlugin(t, Args{Address: addr, CAFile: pki.CAFile,
		CertFile: filepath.Join(other.SchedulerDir, "tls.crt"), KeyFile: filepath.Join(other.SchedulerDir, "tls.key")})
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
	pki := newTestPKI(t)
	a := Args{Address: "127.0.0.1:1", CAFile: pki.CAFile,
		CertFile: writeFile(t, dir, "tls.crt", []byte("not a cert")), KeyFile: writeFile(t, dir, "tls.key", []byte("x"))}
	a.SetDefaults()
	if _, err := NewWithArgs(a); err == nil {
		t.Fatal("a broken client key pair must fail at start-up, not at the first pod")
	}
}
