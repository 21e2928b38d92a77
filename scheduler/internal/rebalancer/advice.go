// Package rebalancer acts on the extender's rebalancing advice (GET
// /v1/rebalance, docs/operations.md "Rebalancing"): a proposal that has
// persisted long enough becomes an eviction through the Eviction API
// (policy/v1), so that PodDisruptionBudgets are enforced by the API server.
// Dry-run by default, rate limited, and it never evicts a pod the advice does
// not name (the pod's UID is a precondition of the eviction).
package rebalancer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Proposal is one entry of GET /v1/rebalance, in the extender's JSON
// (extender/src/api/isolation_api.cc, MoveProposalsJson).
type Proposal struct {
	Victim            string   `json:"victim"`
	VictimNode        string   `json:"victimNode"`
	PersistingWindows int      `json:"persistingWindows"`
	Move              string   `json:"move"` // "namespace/name"
	MoveUID           string   `json:"moveUid"`
	FromNode          string   `json:"fromNode"`
	ToNode            *string  `json:"toNode"` // null: no node takes it
	Score             int      `json:"score"`
	Why               string   `json:"why"`
	Refused           []string `json:"refused"`
}

// Namespace and name of the pod to move.
func (p Proposal) pod() (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(p.Move, "/")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, "/")
}

// maxAdviceBytes bounds the answer read (5 proposals are a few KB).
const maxAdviceBytes = 4 << 20

// AdviceSource reads the proposals.
type AdviceSource interface {
	Proposals(ctx context.Context) ([]Proposal, error)
}

// HTTPAdvice reads GET {BaseURL}/v1/rebalance.
type HTTPAdvice struct {
	BaseURL   string
	Client    *http.Client
	TokenFile string // bearer token for the operator port; empty: none
}

func (h *HTTPAdvice) Proposals(ctx context.Context) ([]Proposal, error) {
	url := strings.TrimSuffix(h.BaseURL, "/") + "/v1/rebalance"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if h.TokenFile != "" {
		token, err := readToken(h.TokenFile)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdviceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w", url, err)
	}
	if len(body) > maxAdviceBytes {
		return nil, fmt.Errorf("GET %s: answer larger than %d bytes", url, maxAdviceBytes)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, e.Error)
	}
	return DecodeAdvice(body)
}

// DecodeAdvice parses the extender's answer; a proposal without the pod to
// move, its UID or its node is an error (it could not be acted on safely).
func DecodeAdvice(body []byte) ([]Proposal, error) {
	var advice struct {
		Proposals *[]Proposal `json:"proposals"`
	}
	if err := json.Unmarshal(body, &advice); err != nil {
		return nil, fmt.Errorf("the rebalance advice is not valid JSON: %w", err)
	}
	if advice.Proposals == nil {
		return nil, errors.New(`the rebalance advice has no "proposals" list`)
	}
	for i, p := range *advice.Proposals {
		if _, _, ok := p.pod(); !ok {
			return nil, fmt.Errorf("proposals[%d].move: want namespace/name, got %q", i, p.Move)
		}
		if p.MoveUID == "" || p.FromNode == "" {
			return nil, fmt.Errorf("proposals[%d] (%s): moveUid and fromNode are required", i, p.Move)
		}
	}
	return *advice.Proposals, nil
}

func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	// The extender's token file format: one token a line, # comments; the
	// first token is ours.
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	return "", fmt.Errorf("token file %s: no token in it", path)
}

// TLSFiles name the PEM files of the HTTPS client. CAFile verifies the
// extender; CertFile and KeyFile (optional, together) are a client
// certificate for a port that asks for one.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
	ServerName                string // default: the URL's host
}

// ClientTLS builds the client configuration; the client certificate is
// reread when its files change (a rotated Secret), checked at most every 10 s.
func ClientTLS(f TLSFiles) (*tls.Config, error) {
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", f.CAFile)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: f.ServerName}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("a client certificate needs both the certificate and the key file")
	}
	if f.CertFile != "" {
		kp := &keyPair{certFile: f.CertFile, keyFile: f.KeyFile}
		if _, err := kp.get(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	return cfg, nil
}

type keyPair struct {
	certFile, keyFile string

	mu       sync.Mutex
	cert     *tls.Certificate
	modTimes [2]time.Time
	checked  time.Time
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cert != nil && time.Since(k.checked) < 10*time.Second {
		return k.cert, nil
	}
	k.checked = time.Now()
	var times [2]time.Time
	for i, f := range []string{k.certFile, k.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if k.cert != nil {
				return k.cert, nil // keep the last good pair while the files are replaced
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
