package plugin

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// maxMessageBytes bounds the extender's answers (a FilterResponse for 5,000
// refused nodes with long reasons is well under 2 MiB).
const maxMessageBytes = 16 << 20

// dial opens one long-lived client connection; gRPC reconnects by itself when
// the extender restarts.
func dial(a Args) (*grpc.ClientConn, placementv1.PlacementClient, error) {
	serverName := a.ServerName
	if serverName == "" {
		serverName, _, _ = net.SplitHostPort(a.Address)
	}
	creds, err := transportCredentials(a, serverName)
	if err != nil {
		return nil, nil, err
	}
	return dialTarget(a.Address, creds)
}

// transportCredentials: plaintext when a.Insecure, else TLS verifying serverName.
func transportCredentials(a Args, serverName string) (credentials.TransportCredentials, error) {
	if a.Insecure {
		return insecure.NewCredentials(), nil
	}
	cfg, err := clientTLS(a, serverName)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

func dialTarget(target string, creds credentials.TransportCredentials) (*grpc.ClientConn, placementv1.PlacementClient, error) {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		// Reconnect within about a second of the extender coming back: gRPC's
		// default backoff grows to 120 s, and every pod in between would be
		// scheduled without Neighborly (its calls fail fast while the channel
		// waits to retry).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		}),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("neighborly placement client for %s: %w", target, err)
	}
	return conn, placementv1.NewPlacementClient(conn), nil
}

func clientTLS(a Args, serverName string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(a.CAFile)
	if err != nil {
		return nil, fmt.Errorf("caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("caFile %s: no PEM certificate in it", a.CAFile)
	}
	kp := &reloadingKeyPair{certFile: a.CertFile, keyFile: a.KeyFile}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		RootCAs:              pool,
		ServerName:           serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() },
	}, nil
}

// reloadingKeyPair rereads the client certificate when either file changes
// (cert-manager or the chart rotating it), checked at most every 10 s.
type reloadingKeyPair struct {
	certFile, keyFile string

	mu       sync.Mutex
	cert     *tls.Certificate
	modTimes [2]time.Time
	checked  time.Time
}

func (k *reloadingKeyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if k.cert != nil && now.Sub(k.checked) < 10*time.Second {
		return k.cert, nil
	}
	k.checked = now
	var times [2]time.Time
	for i, f := range []string{k.certFile, k.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if k.cert != nil {
				return k.cert, nil // keep the last good one while files are replaced
			}
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		times[i] = st.ModTime()
	}
	if k.cert != nil && times == k.modTimes {
		return k.cert, nil
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			return k.cert, nil
		}
		return nil, fmt.Errorf("client certificate %s / %s: %w", k.certFile, k.keyFile, err)
	}
	k.cert, k.modTimes = &c, times
	return k.cert, nil
}
