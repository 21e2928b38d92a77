package e2e

import (
	"crypto/tls"
	"testing"

	"neighborly.dev/scheduler/internal/testpki"
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
	p, err := testpki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &pki{schedulerDir: p.SchedulerDir, caFile: p.CAFile, serverCert: p.ServerCert,
		serverKey: p.ServerKey, client: p.Client}
}
