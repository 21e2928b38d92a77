package rebalancer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The extender's exact answer (neighborlyctl rebalance's source), one
// proposal with a target and one without.
const extenderAnswer = `{"proposals":[{"victim":"content/article-service-5d8f7-abcde","victimNode":"node-1",` +
	`"persistingWindows":11,"move":"analytics/event-ingest-5b7c9-qwert","moveUid":"6f1c0e1a-0000-4000-8000-000000000003",` +
	`"fromNode":"node-1","toNode":"node-3","score":8,"why":"the antagonist (score 0.99) is the cheaper to move",` +
	`"refused":["node-6: interference: would slow ..."]},` +
	`{"victim":"a/b","victimNode":"node-2","persistingWindows":10,"move":"a/c","moveUid":"u2","fromNode":"node-2",` +
	`"toNode":null,"score":0,"why":"","refused":[]}]}`

func TestDecodeAdvice(t *testing.T) {
	got, err := DecodeAdvice([]byte(extenderAnswer))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Move != "analytics/event-ingest-5b7c9-qwert" || got[0].ToNode == nil ||
		*got[0].ToNode != "node-3" || got[0].MoveUID != "6f1c0e1a-0000-4000-8000-000000000003" || got[1].ToNode != nil {
		t.Fatalf("decoded %+v", got)
	}
	for body, want := range map[string]string{
		`not json`: "not valid JSON",
		`{}`:       `no "proposals" list`,
		`{"proposals":[{"move":"nons","moveUid":"u","fromNode":"n"}]}`:  "want namespace/name",
		`{"proposals":[{"move":"a/b/c","moveUid":"u","fromNode":"n"}]}`: "want namespace/name",
		`{"proposals":[{"move":"a/b","fromNode":"n"}]}`:                 "moveUid and fromNode are required",
		`{"proposals":[{"move":"a/b","moveUid":"u","fromNode":""}]}`:    "moveUid and fromNode are required",
	} {
		if _, err := DecodeAdvice([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", body, err, want)
		}
	}
}

func TestHTTPAdviceOverTLSWithToken(t *testing.T) {
	var auth string
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/rebalance" {
			http.NotFound(w, r)
			return
		}
		auth = r.Header.Get("Authorization")
		if auth != "Bearer 0123456789abcdef0123" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"Error":"a listed bearer token is required"}`))
			return
		}
		w.Write([]byte(extenderAnswer))
	}))
	defer server.Close()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("# operator tokens\n\n0123456789abcdef0123\nsecond-token-xxxxxxxx\n"), 0o600)
	a := &HTTPAdvice{BaseURL: server.URL + "/", Client: server.Client(), TokenFile: tokens}
	got, err := a.Proposals(context.Background())
	if err != nil || len(got) != 2 {
		t.Fatalf("proposals %+v, err %v", got, err)
	}
	os.WriteFile(tokens, []byte("wrong-token-0123456789\n"), 0o600)
	if _, err := a.Proposals(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 403: a listed bearer token is required") {
		t.Errorf("a refused token: %v", err)
	}
	a.TokenFile = filepath.Join(dir, "missing")
	if _, err := a.Proposals(context.Background()); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("a missing token file: %v", err)
	}
}

func TestClientTLSNamesBadFiles(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.crt")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	if _, err := ClientTLS(TLSFiles{CAFile: filepath.Join(dir, "none")}); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA: %v", err)
	}
	if _, err := ClientTLS(TLSFiles{CAFile: notPEM}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("CA without PEM: %v", err)
	}
}
