package testpki

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// The files New writes make a working mutual-TLS pair: a server with the
// extender's certificate that requires client certificates from the CA
// accepts Client, and refuses a client without a certificate.
func TestNewMakesAWorkingMutualTLSPair(t *testing.T) {
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.CAFile, p.ServerCert, p.ServerKey,
		filepath.Join(p.SchedulerDir, "tls.crt"), filepath.Join(p.SchedulerDir, "tls.key")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("missing %s: %v", f, err)
		}
	}
	cert, err := tls.LoadX509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.Client.RootCAs}
	srv.StartTLS()
	defer srv.Close()

	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: p.Client}}).Get(srv.URL)
	if err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "neighborly-scheduler" {
		t.Errorf("server saw client %q, want neighborly-scheduler", body)
	}

	anonymous := p.Client.Clone()
	anonymous.Certificates = nil
	if resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: anonymous}}).Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Error("a client without a certificate was accepted")
	}
}
