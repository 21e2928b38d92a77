package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pod the rebalancing advice moves in the seed's incident, and the node
// it is on.
const (
	movedNamespace = "analytics"
	movedName      = "event-ingest-5b7c9-qwert"
	movedFrom      = "node-1"
)

// TestRebalancerEvictsThroughTheEvictionAPI runs neighborly-rebalancer
// against the real API server, reading the advice of the real extender fed
// by `neighborly-agent --simulate` with the seed's incident
// (deploy/examples/content-platform-incident.yaml), whose pods exist in the
// API server with the UIDs the agent reports. In turn: dry-run evicts
// nothing; a PodDisruptionBudget makes the API server refuse the eviction
// (429); without it the pod is evicted — and no other pod is touched.
func TestRebalancerEvictsThroughTheEvictionAPI(t *testing.T) {
	p := getPaths(t)
	cp := startControlPlane(t)
	certs := newPKI(t)
	ctx := context.Background()

	incident := filepath.Join(p.root, "deploy/examples/content-platform-incident.yaml")
	nodes := readScenarioFile(t, incident)
	createCluster(t, cp, nodes)
	scenario := scenarioWithAPIServerUIDs(t, cp, incident, nodes)

	// The extender with the chart's operator port: HTTPS with the
	// extender's certificate and a bearer token, what the rebalancer reads.
	operatorPort := freePort(t)
	token := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, token, "# the chart's operator-tokens Secret\nrebalancer-e2e-token-0123456789\n")
	config := filepath.Join(t.TempDir(), "extender.yaml")
	writeFile(t, config, fmt.Sprintf("operator:\n  address: 127.0.0.1:%d\n  tokenFile: %s\n  tls:\n    certFile: %s\n    keyFile: %s\n",
		operatorPort, token, certs.serverCert, certs.serverKey))
	grpcPort := freePort(t)
	ext := startProcess(t, "extender", p.extender, "--config", config, "--http-address", "127.0.0.1:0",
		"--grpc-address", fmt.Sprintf("127.0.0.1:%d", grpcPort), "--grpc-insecure-plaintext", "--log-level", "info")
	ext.waitForLog(t, regexp.MustCompile(`listening http=\S+ grpc=\S+ operator=\S+`), 30*time.Second)
	startProcess(t, "agent", p.agent, "--simulate", scenario, "--extender", fmt.Sprintf("127.0.0.1:%d", grpcPort),
		"--interval", "300ms", "--insecure-plaintext", "--log-level", "warn")
	extenderURL := fmt.Sprintf("https://127.0.0.1:%d", operatorPort)
	waitForProposal(t, extenderURL, certs, "rebalancer-e2e-token-0123456789")

	// Fast hysteresis for the test: 3 polls 300ms apart, 500ms at least.
	rebalancer := func(name string, args ...string) *process {
		return startProcess(t, name, p.rebalancer, append([]string{"--extender-url", extenderURL,
			"--ca-file", certs.caFile, "--token-file", token, "--kubeconfig", cp.kubeconfig,
			"--interval", "300ms", "--min-polls", "3", "--min-duration", "500ms",
			"--metrics-address", "127.0.0.1:0"}, args...)...)
	}
	pod := func() *v1.Pod {
		got, err := cp.client.CoreV1().Pods(movedNamespace).Get(ctx, movedName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return got
	}
	movedLine := func(msg string) *regexp.Regexp {
		return regexp.MustCompile(`msg="?` + regexp.QuoteMeta(msg) + `"? pod=` + movedNamespace + "/" + movedName +
			` .*from=` + movedFrom + ` .*to=(\S+) result=(\S+) detail=(".*?"|\S+)`)
	}

	t.Run("dry-run (the default) evicts nothing", func(t *testing.T) {
		r := rebalancer("rebalancer-dry-run")
		m := r.waitForLog(t, movedLine("dry-run: would evict"), 90*time.Second)
		t.Logf("dry-run: would move %s/%s to %s (%s: %s)", movedNamespace, movedName, m[1], m[2], m[3])
		metrics := scrapeRebalancer(t, r)
		r.stop(t)
		if got := pod(); got == nil || got.DeletionTimestamp != nil {
			t.Fatalf("dry-run deleted the pod: %+v", got)
		}
		if !strings.Contains(metrics, `neighborly_rebalancer_evictions_total{dry_run="true",result="would_evict"} 1`) {
			t.Errorf("no would_evict count in the rebalancer's /metrics:\n%s", grepLines(metrics, "neighborly_rebalancer"))
		}
	})

	t.Run("a PodDisruptionBudget refuses the eviction (429)", func(t *testing.T) {
		pdb := disruptionBudget(t, cp, movedNamespace, "event-ingest", map[string]string{"app": "event-ingest"})
		r := rebalancer("rebalancer-pdb", "--dry-run=false")
		m := r.waitForLog(t, movedLine("eviction refused"), 90*time.Second)
		t.Logf("refused: %s", m[3])
		if m[2] != "refused" || !strings.Contains(m[3], "disruption budget") {
			t.Errorf("the refusal does not name the budget: result %s, %s", m[2], m[3])
		}
		metrics := scrapeRebalancer(t, r)
		r.stop(t)
		if got := pod(); got == nil || got.DeletionTimestamp != nil {
			t.Fatalf("the pod was deleted despite its disruption budget: %+v", got)
		}
		if !strings.Contains(metrics, `neighborly_rebalancer_evictions_total{dry_run="false",result="refused"}`) ||
			strings.Contains(metrics, `result="evicted"`) {
			t.Errorf("the rebalancer's /metrics:\n%s", grepLines(metrics, "neighborly_rebalancer_evictions"))
		}
		if err := cp.client.PolicyV1().PodDisruptionBudgets(movedNamespace).Delete(ctx, pdb, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("without a budget in the way the pod is evicted", func(t *testing.T) {
		before := podUIDs(t, cp)
		r := rebalancer("rebalancer-live", "--dry-run=false")
		m := r.waitForLog(t, movedLine("evicted"), 90*time.Second)
		t.Logf("evicted %s/%s (advice: to %s)", movedNamespace, movedName, m[1])
		metrics := scrapeRebalancer(t, r)
		// Nothing else: the other pods keep their UIDs and are not terminating.
		if got := pod(); got != nil && got.DeletionTimestamp == nil {
			t.Fatalf("the API server accepted the eviction but the pod is not terminating: %+v", got.ObjectMeta)
		}
		after := podUIDs(t, cp)
		for key, uid := range before {
			if key == movedNamespace+"/"+movedName {
				continue
			}
			if after[key] != uid {
				t.Errorf("pod %s was touched (uid %s -> %q)", key, uid, after[key])
			}
		}
		if !strings.Contains(metrics, `neighborly_rebalancer_evictions_total{dry_run="false",result="evicted"} 1`) {
			t.Errorf("the rebalancer's /metrics:\n%s", grepLines(metrics, "neighborly_rebalancer"))
		}
		r.stop(t)
	})
}

// scenarioWithAPIServerUIDs writes a copy of the scenario in which each pod
// has the UID the API server gave it, as a real agent would report it.
func scenarioWithAPIServerUIDs(t *testing.T, cp *controlPlane, path string, nodes []scenarioNode) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, n := range nodes {
		for _, sp := range n.Pods {
			pod, err := cp.client.CoreV1().Pods(sp.Namespace).Get(context.Background(), sp.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(text, sp.UID) != 1 {
				t.Fatalf("%s: uid %s appears %d times", path, sp.UID, strings.Count(text, sp.UID))
			}
			text = strings.Replace(text, sp.UID, string(pod.UID), 1)
			// What a kubelet would report: running and ready (the Eviction API
			// ignores budgets for Pending pods).
			pod.Status.Phase = v1.PodRunning
			pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			if _, err := cp.client.CoreV1().Pods(sp.Namespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("marking %s/%s running: %v", sp.Namespace, sp.Name, err)
			}
		}
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	writeFile(t, out, text)
	return out
}

// disruptionBudget creates a PodDisruptionBudget that allows no disruption
// of the one pod it selects, with the status the disruption controller (not
// running here) would give it.
func disruptionBudget(t *testing.T, cp *controlPlane, namespace, name string, selector map[string]string) string {
	t.Helper()
	ctx := context.Background()
	one := intstr.FromInt32(1)
	pdb, err := cp.client.PolicyV1().PodDisruptionBudgets(namespace).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: selector}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := cp.client.PolicyV1().PodDisruptionBudgets(namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// waitForProposal waits until the extender's advice moves the analytics job.
func waitForProposal(t *testing.T, baseURL string, certs *pki, token string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: certs.client.Clone()}}
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, baseURL+"/v1/rebalance", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(body)
			var advice struct {
				Proposals []struct{ Move, FromNode string }
			}
			if json.Unmarshal(body, &advice) == nil {
				for _, m := range advice.Proposals {
					if m.Move == movedNamespace+"/"+movedName && m.FromNode == movedFrom {
						t.Logf("the extender's advice: %s", last)
						return
					}
				}
			}
		} else {
			last = err.Error()
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("no rebalance proposal for %s/%s within 90 s; last answer: %s", movedNamespace, movedName, last)
}

var metricsAddress = regexp.MustCompile(`msg="neighborly-rebalancer started" .* metrics=(\S+)`)

func scrapeRebalancer(t *testing.T, r *process) string {
	t.Helper()
	addr := r.waitForLog(t, metricsAddress, 10*time.Second)[1]
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping the rebalancer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func podUIDs(t *testing.T, cp *controlPlane) map[string]string {
	t.Helper()
	pods, err := cp.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Namespace+"/"+p.Name] = string(p.UID)
		}
	}
	return out
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
