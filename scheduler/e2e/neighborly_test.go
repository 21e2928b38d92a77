package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"neighborly.dev/scheduler/internal/testpki"
)

// paths holds the binaries and files the test needs; defaults are relative
// to the repository root, overridable from the environment (the Makefile sets
// them).
type paths struct {
	root, extender, agent, kubeScheduler, neighborlyScheduler, rebalancer, helm, scenario, incoming string
}

func getPaths(t *testing.T) paths {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	build := env("NEIGHBORLY_BUILD_DIR", filepath.Join(root, "build/default"))
	p := paths{
		root:                root,
		extender:            filepath.Join(build, "extender/neighborly-extender"),
		agent:               filepath.Join(build, "node-agent/neighborly-agent"),
		kubeScheduler:       env("KUBE_SCHEDULER", filepath.Join(root, "build/go/bin/kube-scheduler")),
		neighborlyScheduler: env("NEIGHBORLY_SCHEDULER", filepath.Join(root, "build/go/bin/neighborly-scheduler")),
		rebalancer:          env("NEIGHBORLY_REBALANCER", filepath.Join(root, "build/go/bin/neighborly-rebalancer")),
		helm:                os.Getenv("NEIGHBORLY_HELM"),
		scenario:            filepath.Join(root, "deploy/examples/content-platform.yaml"),
		incoming:            filepath.Join(root, "deploy/examples/content-platform-incoming.json"),
	}
	if p.helm == "" {
		out, err := exec.Command(filepath.Join(root, "scripts/helm.sh")).Output()
		if err != nil {
			t.Fatalf("no Helm: set NEIGHBORLY_HELM or make scripts/helm.sh work: %v", err)
		}
		p.helm = strings.TrimSpace(string(out))
	}
	return p
}

// extender is a running neighborly-extender: HTTPS for kube-scheduler (mutual
// TLS, as the chart configures it) and plaintext telemetry on loopback.
type extender struct {
	proc               *process
	httpPort, grpcPort int
	placementPort      int // 0: no placement port
	client             *http.Client
}

func startExtender(t *testing.T, p paths, certs *pki, httpPort, grpcPort int, extraArgs ...string) *extender {
	t.Helper()
	config := filepath.Join(t.TempDir(), "extender.yaml")
	// The scheduler's role on both ports, as the chart configures it: only
	// kube-scheduler's certificate, not any other the CA signed.
	content := fmt.Sprintf("http:\n  tls:\n    certFile: %s\n    keyFile: %s\n    clientCaFile: %s\n    allowedClientNames: [%s]\n",
		certs.serverCert, certs.serverKey, certs.caFile, testpki.SchedulerName)
	for _, a := range extraArgs {
		if a == "--placement-address" {
			// The placement port as the chart sets it up: mutual TLS with the
			// scheduler's client certificate from the same CA.
			content += fmt.Sprintf("placement:\n  tls:\n    certFile: %s\n    keyFile: %s\n    caFile: %s\n    allowedClientNames: [%s]\n",
				certs.serverCert, certs.serverKey, certs.caFile, testpki.SchedulerName)
		}
	}
	writeFile(t, config, content)
	args := append([]string{"--config", config,
		"--http-address", fmt.Sprintf("127.0.0.1:%d", httpPort),
		"--grpc-address", fmt.Sprintf("127.0.0.1:%d", grpcPort),
		"--grpc-insecure-plaintext", "--log-level", "info"}, extraArgs...)
	proc := startProcess(t, "extender", p.extender, args...)
	proc.waitForLog(t, regexp.MustCompile(`listening http=\S+ grpc=\S+`), 30*time.Second)
	return &extender{proc: proc, httpPort: httpPort, grpcPort: grpcPort,
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: certs.client.Clone()}}}
}

func (e *extender) url(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", e.httpPort, path)
}

// waitForFleet waits until the extender has telemetry for n nodes.
func (e *extender) waitForFleet(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var nodes []json.RawMessage
		resp, err := e.client.Get(e.url("/v1/nodes"))
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&nodes)
			resp.Body.Close()
		}
		if err == nil && len(nodes) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("extender knows %d of %d nodes after 60 s (last error: %v)", len(nodes), n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var requestsTotal = regexp.MustCompile(`(?m)^neighborly_extender_http_requests_total\{verb="([a-z]+)",code="(\d+)"\} (\d+)`)

// requests returns neighborly_extender_http_requests_total by verb and code ("filter/200").
func (e *extender) requests(t *testing.T) map[string]int {
	t.Helper()
	return e.counts(t, requestsTotal)
}

var placementTotal = regexp.MustCompile(`(?m)^neighborly_placement_requests_total\{method="([A-Za-z]+)",code="([A-Z_]+)"\} (\d+)`)

// placementRequests returns neighborly_placement_requests_total by method and
// code ("VerdictsReserve/OK").
func (e *extender) placementRequests(t *testing.T) map[string]int {
	t.Helper()
	return e.counts(t, placementTotal)
}

// counts scrapes the extender's /metrics and sums the samples `series`
// matches by its two labels ("a/b"); the third group is the value.
func (e *extender) counts(t *testing.T, series *regexp.Regexp) map[string]int {
	t.Helper()
	resp, err := e.client.Get(e.url("/metrics"))
	if err != nil {
		t.Fatalf("scraping the extender's /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	counts := map[string]int{}
	for _, m := range series.FindAllStringSubmatch(string(body), -1) {
		n, _ := strconv.Atoi(m[3])
		counts[m[1]+"/"+m[2]] += n
	}
	return counts
}

// schedulerConfig renders the chart's KubeSchedulerConfiguration (the
// scheduler ConfigMap of mode second-scheduler) and adapts exactly two things
// to a process outside a cluster: clientConnection.kubeconfig (in a pod it is
// the in-cluster config) and the directory of the TLS files (the Secret is
// mounted at /etc/neighborly-tls in the pod). Everything else, the extender
// entry included, is used as rendered.
func schedulerConfig(t *testing.T, p paths, cp *controlPlane, certs *pki, ext *extender, sets ...string) string {
	t.Helper()
	args := []string{"template", "neighborly", filepath.Join(p.root, "charts/neighborly"),
		"--namespace", "neighborly", "--show-only", "templates/scheduler-configmap.yaml",
		"--set", fmt.Sprintf("schedulerExtender.urlPrefix=https://127.0.0.1:%d", ext.httpPort)}
	// helm template assumes its own default cluster version; render for the
	// API server the test runs (the chart picks images by it).
	if v, err := cp.client.Discovery().ServerVersion(); err == nil {
		args = append(args, "--kube-version", v.GitVersion)
	} else {
		t.Fatalf("the API server's version: %v", err)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(p.helm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var cm v1.ConfigMap
	if err := yaml.Unmarshal(out, &cm); err != nil {
		t.Fatalf("the chart's scheduler ConfigMap: %v\n%s", err, out)
	}
	rendered, ok := cm.Data["scheduler-config.yaml"]
	if !ok {
		t.Fatalf("the chart's scheduler ConfigMap has no scheduler-config.yaml:\n%s", out)
	}
	if !strings.Contains(rendered, "/etc/neighborly-tls/") {
		t.Fatalf("the rendered config no longer mounts /etc/neighborly-tls; update the test:\n%s", rendered)
	}
	rendered = strings.ReplaceAll(rendered, "/etc/neighborly-tls/", certs.schedulerDir+"/")
	var config map[string]any
	if err := yaml.Unmarshal([]byte(rendered), &config); err != nil {
		t.Fatalf("the rendered scheduler config: %v\n%s", err, rendered)
	}
	config["clientConnection"] = map[string]any{"kubeconfig": cp.kubeconfig}
	if ext.placementPort != 0 {
		setPluginAddress(t, config, fmt.Sprintf("127.0.0.1:%d", ext.placementPort))
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	writeFile(t, path, string(data))
	t.Logf("kube-scheduler config (chart-rendered, helm %s):\n%s", strings.Join(sets, " "), data)
	return path
}

func startScheduler(t *testing.T, p paths, config string) *process {
	t.Helper()
	return startSchedulerBinary(t, "kube-scheduler", p.kubeScheduler, config)
}

func startSchedulerBinary(t *testing.T, name, bin, config string) *process {
	t.Helper()
	proc := startProcess(t, name, bin, "--config="+config, "--secure-port=0", "-v=2")
	proc.waitForLog(t, regexp.MustCompile(`(?i)successfully acquired lease`), 60*time.Second)
	return proc
}

// scenarioNode is one node of the scenario the agent streams, with the pods
// its agent reports running there.
type scenarioNode struct {
	Name string `json:"name"`
	Pods []struct {
		UID                  string            `json:"uid"`
		Namespace            string            `json:"namespace"`
		Name                 string            `json:"name"`
		QosClass             string            `json:"qosClass"`
		Labels               map[string]string `json:"labels"`
		Annotations          map[string]string `json:"annotations"`
		CPURequestMillicores int64             `json:"cpuRequestMillicores"`
		MemoryRequestBytes   int64             `json:"memoryRequestBytes"`
	} `json:"pods"`
}

func readScenario(t *testing.T, p paths) []scenarioNode {
	t.Helper()
	return readScenarioFile(t, p.scenario)
}

func readScenarioFile(t *testing.T, path string) []scenarioNode {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var scenario struct {
		Nodes []scenarioNode `json:"nodes"`
	}
	if err := yaml.Unmarshal(data, &scenario); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(scenario.Nodes) == 0 {
		t.Fatalf("%s has no nodes", path)
	}
	return scenario.Nodes
}

// createCluster registers the scenario's nodes as the demo sizes them (16 cpu
// and 64 GiB each, Ready) and binds the pods the scenario has running on them,
// with their requests: kube-scheduler's own scores (LeastAllocated,
// BalancedAllocation) then see the loads the demo's DEFAULT column sees, and
// break Neighborly's ties the same way.
func createCluster(t *testing.T, cp *controlPlane, nodes []scenarioNode) {
	t.Helper()
	ctx := context.Background()
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("16"),
		v1.ResourceMemory: resource.MustParse("64Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	namespaces := map[string]bool{}
	for _, n := range nodes {
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name}},
			Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
		}
		if _, err := cp.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", n.Name, err)
		}
		for _, sp := range n.Pods {
			if !namespaces[sp.Namespace] {
				createNamespaces(t, cp, sp.Namespace)
				namespaces[sp.Namespace] = true
			}
			var res v1.ResourceRequirements
			if sp.CPURequestMillicores > 0 || sp.MemoryRequestBytes > 0 {
				res.Requests = v1.ResourceList{
					v1.ResourceCPU:    *resource.NewMilliQuantity(sp.CPURequestMillicores, resource.DecimalSI),
					v1.ResourceMemory: *resource.NewQuantity(sp.MemoryRequestBytes, resource.BinarySI),
				}
				if sp.QosClass == "Guaranteed" {
					res.Limits = res.Requests
				}
			}
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: sp.Name, Namespace: sp.Namespace, Labels: sp.Labels, Annotations: sp.Annotations},
				Spec: v1.PodSpec{NodeName: n.Name, Containers: []v1.Container{{
					Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: res}}},
			}
			if _, err := cp.client.CoreV1().Pods(sp.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating running pod %s/%s on %s: %v", sp.Namespace, sp.Name, n.Name, err)
			}
		}
	}
}

// createNamespaces creates the namespaces that do not exist yet.
func createNamespaces(t *testing.T, cp *controlPlane, names ...string) {
	t.Helper()
	for _, name := range names {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cp.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", name, err)
		}
	}
}

// incomingPods reads the demo's two pods as kube-scheduler would see them.
func incomingPods(t *testing.T, p paths) []*v1.Pod {
	t.Helper()
	data, err := os.ReadFile(p.incoming)
	if err != nil {
		t.Fatal(err)
	}
	var incoming struct {
		Pods []*v1.Pod `json:"pods"`
	}
	if err := json.Unmarshal(data, &incoming); err != nil {
		t.Fatalf("%s: %v", p.incoming, err)
	}
	for _, pod := range incoming.Pods {
		// What the API server assigns itself; the rest is created as written.
		pod.UID, pod.CreationTimestamp, pod.GenerateName = "", metav1.Time{}, ""
		pod.Status = v1.PodStatus{}
	}
	return incoming.Pods
}

// demoPicks runs `make demo`'s script and returns, per pod, the node it says
// Neighborly picks.
func demoPicks(t *testing.T, p paths) []demoDecision {
	t.Helper()
	cmd := exec.Command(filepath.Join(p.root, "scripts/demo.sh"), filepath.Dir(filepath.Dir(p.extender)))
	cmd.Dir = p.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
	}
	var picks []demoDecision
	scores := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	pick := regexp.MustCompile(`Neighborly picks (\S+?);`)
	// A table row: "   node-5  pass        8/10 * 141      residents".
	row := regexp.MustCompile(`^\s+(\S+)\s+pass\s+(\d+)/10`)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[2])
			scores[m[1]] = n
		}
		if m := pick.FindStringSubmatch(sc.Text()); m != nil {
			picks = append(picks, demoDecision{node: m[1], scores: scores})
			scores = map[string]int{}
		}
	}
	t.Logf("the demo's decisions: %v", picks)
	return picks
}

// One of the demo's decisions: the node Neighborly picks and the 0..10 score
// of every node that passed its filter.
type demoDecision struct {
	node   string
	scores map[string]int
}

// agrees says whether kube-scheduler's binding agrees with the demo's
// decision: the same node, or a node Neighborly passed with a score at most
// one below its pick's (kube-scheduler adds its own plugins' scores, which
// break near-ties the demo cannot see).
func (d demoDecision) agrees(node string) bool {
	if node == d.node {
		return true
	}
	score, passed := d.scores[node]
	return passed && score >= d.scores[d.node]-1
}

// waitScheduled waits until the pod has spec.nodeName and returns it.
func waitScheduled(t *testing.T, cp *controlPlane, namespace, name string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pod, err := cp.client.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && pod.Spec.NodeName != "" {
			return pod.Spec.NodeName
		}
		if time.Now().After(deadline) {
			events, _ := cp.client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
			var msgs []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == name {
					msgs = append(msgs, e.Reason+": "+e.Message)
				}
			}
			t.Fatalf("%s/%s not scheduled within %v (err %v); events: %v", namespace, name, timeout, err, msgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitEvent waits for an event with the reason about the pod and returns its message.
func waitEvent(t *testing.T, cp *controlPlane, namespace, name, reason string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		events, err := cp.client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, e := range events.Items {
				if e.InvolvedObject.Name == name && e.Reason == reason {
					return e.Message
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event for %s/%s within %v (err %v)", reason, namespace, name, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func createPod(t *testing.T, cp *controlPlane, pod *v1.Pod) {
	t.Helper()
	if _, err := cp.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

// plainPod is a standard-class pod for the fault cases.
func plainPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "e2e"},
		Spec: v1.PodSpec{
			SchedulerName: "neighborly-scheduler",
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}},
		},
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
