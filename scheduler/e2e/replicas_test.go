package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// serviceProxy stands in for the extender's ClusterIP Service: every new
// connection goes to the first backend that accepts it, in order, as
// kube-proxy (sessionAffinity: ClientIP) keeps the scheduler on one replica
// and moves it to another once the dead one's endpoint is gone. TLS passes
// through untouched (the scheduler's client certificate reaches the replica).
type serviceProxy struct {
	lis      net.Listener
	port     int
	backends []string

	mu     sync.Mutex
	routed map[string]int // connections by backend
}

func startServiceProxy(t *testing.T, backends ...string) *serviceProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &serviceProxy{lis: lis, port: lis.Addr().(*net.TCPAddr).Port, backends: backends, routed: map[string]int{}}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go s.forward(c)
		}
	}()
	return s
}

func (s *serviceProxy) forward(c net.Conn) {
	defer c.Close()
	for _, b := range s.backends {
		up, err := net.DialTimeout("tcp", b, time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		s.mu.Lock()
		s.routed[b]++
		s.mu.Unlock()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		return
	}
}

func (s *serviceProxy) connections(backend string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routed[backend]
}

// The chart's default of two extender replicas behind the stock
// kube-scheduler (its own configuration, ignorable: true): the agents stream
// to both, both know every node, and when the replica the scheduler talks to
// is killed mid-burst, pods keep being scheduled and Neighborly is consulted
// on the survivor.
func TestTwoReplicasSurviveLosingTheOneTheSchedulerUses(t *testing.T) {
	p := getPaths(t)
	cp := startControlPlane(t)
	certs := newPKI(t)

	a := startExtender(t, p, certs, freePort(t), freePort(t))
	b := startExtender(t, p, certs, freePort(t), freePort(t))
	nodes := readScenario(t, p)
	startProcess(t, "agent", p.agent, "--simulate", p.scenario,
		"--extender", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", a.grpcPort, b.grpcPort),
		"--interval", "1s", "--insecure-plaintext", "--log-level", "warn")
	a.waitForFleet(t, len(nodes))
	b.waitForFleet(t, len(nodes))
	createCluster(t, cp, nodes)
	createNamespaces(t, cp, "neighborly", "analytics", "content", "e2e")

	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", a.httpPort), fmt.Sprintf("127.0.0.1:%d", b.httpPort)
	svc := startServiceProxy(t, addrA, addrB)
	startScheduler(t, p, schedulerConfig(t, p, cp, certs, &extender{httpPort: svc.port}))

	schedule := func(prefix string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			createPod(t, cp, plainPod(fmt.Sprintf("%s-%d", prefix, i)))
		}
		for i := 0; i < n; i++ {
			node := waitScheduled(t, cp, "e2e", fmt.Sprintf("%s-%d", prefix, i), 60*time.Second)
			t.Logf("e2e/%s-%d bound to %s", prefix, i, node)
		}
	}

	beforeA := a.requests(t)
	schedule("before", 3)
	if moved := a.requests(t)["filter/200"] - beforeA["filter/200"]; moved < 3 {
		t.Fatalf("replica A (the scheduler's) answered %d filters for 3 pods", moved)
	}

	// A burst, and the scheduler's replica killed in the middle of it.
	midB := b.requests(t)
	for i := 0; i < 6; i++ {
		createPod(t, cp, plainPod(fmt.Sprintf("during-%d", i)))
		if i == 2 {
			a.proc.signal(t, syscall.SIGKILL)
		}
	}
	for i := 0; i < 6; i++ {
		node := waitScheduled(t, cp, "e2e", fmt.Sprintf("during-%d", i), 60*time.Second)
		t.Logf("e2e/during-%d bound to %s", i, node)
	}
	schedule("after", 3)
	afterB := b.requests(t)
	for _, verb := range []string{"filter/200", "prioritize/200"} {
		if moved := afterB[verb] - midB[verb]; moved < 3 {
			t.Errorf("the surviving replica's %s moved by %d for the pods after the kill", verb, moved)
		}
	}
	if svc.connections(addrB) == 0 {
		t.Errorf("no connection ever reached the surviving replica")
	}
	t.Logf("connections: A %d, B %d; survivor's filter/200 %d -> %d", svc.connections(addrA),
		svc.connections(addrB), midB["filter/200"], afterB["filter/200"])
}

// editPluginArgs rewrites the Neighborly plugin's args in a scheduler config file.
func editPluginArgs(t *testing.T, path string, edit func(args map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	if err := yaml.Unmarshal(data, &config); err != nil {
		t.Fatal(err)
	}
	profiles, _ := config["profiles"].([]any)
	for _, pr := range profiles {
		profile, _ := pr.(map[string]any)
		entries, _ := profile["pluginConfig"].([]any)
		for _, e := range entries {
			if entry, _ := e.(map[string]any); entry["name"] == "Neighborly" {
				args, _ := entry["args"].(map[string]any)
				edit(args)
			}
		}
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(out))
}

// The same with neighborly-scheduler and the plugin (the chart's
// scheduler.integration=plugin): the replicas' placement ports on
// 127.0.0.1 and 127.0.0.2 behind one name (peersAddress), which the scheduler
// resolves through a hosts file of its own (a mount namespace, unshare -m:
// the machine's /etc/hosts is not touched). Reserve reaches both replicas;
// when the scheduler's replica dies mid-burst the survivor already holds the
// bookings, and pods keep being scheduled with its answers.
func TestTwoReplicasWithThePluginSurviveLosingTheOneTheSchedulerUses(t *testing.T) {
	p := getPaths(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) (util-linux) is not installed")
	}
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	writeFile(t, hosts, "127.0.0.1 localhost\n127.0.0.1 replicas.neighborly.test\n127.0.0.2 replicas.neighborly.test\n")
	wrap := []string{"--mount"}
	if os.Geteuid() != 0 {
		wrap = append(wrap, "--map-root-user")
	}
	wrap = append(wrap, "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts)
	if out, err := exec.Command(unshare, append(wrap, "getent", "ahostsv4", "replicas.neighborly.test")...).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "127.0.0.2") {
		t.Skipf("this host cannot give a process its own /etc/hosts (unshare --mount): %v %s", err, out)
	}
	cp := startControlPlane(t)
	certs := newPKI(t)

	placementPort := freePort(t)
	a := startExtender(t, p, certs, freePort(t), freePort(t), "--placement-address", fmt.Sprintf("127.0.0.1:%d", placementPort))
	b := startExtender(t, p, certs, freePort(t), freePort(t), "--placement-address", fmt.Sprintf("127.0.0.2:%d", placementPort))
	nodes := readScenario(t, p)
	startProcess(t, "agent", p.agent, "--simulate", p.scenario,
		"--extender", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", a.grpcPort, b.grpcPort),
		"--interval", "1s", "--insecure-plaintext", "--log-level", "warn")
	a.waitForFleet(t, len(nodes))
	b.waitForFleet(t, len(nodes))
	createCluster(t, cp, nodes)
	createNamespaces(t, cp, "neighborly", "analytics", "content", "e2e")

	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", placementPort), fmt.Sprintf("127.0.0.2:%d", placementPort)
	svc := startServiceProxy(t, addrA, addrB)
	config := schedulerConfig(t, p, cp, certs, &extender{httpPort: a.httpPort, placementPort: svc.port},
		"scheduler.integration=plugin")
	editPluginArgs(t, config, func(args map[string]any) {
		if !strings.Contains(fmt.Sprint(args["peersAddress"]), "extender-agents") {
			t.Errorf("the chart's peersAddress is %v, not the headless Service", args["peersAddress"])
		}
		args["peersAddress"] = fmt.Sprintf("replicas.neighborly.test:%d", placementPort)
		args["serverName"] = "127.0.0.1" // the test certificate's name, for every address
	})
	proc := startProcess(t, "neighborly-scheduler", unshare,
		append(wrap, p.neighborlyScheduler, "--config="+config, "--secure-port=0", "-v=2")...)
	proc.waitForLog(t, regexp.MustCompile(`(?i)successfully acquired lease`), 60*time.Second)

	schedule := func(prefix string, n int) []string {
		t.Helper()
		for i := 0; i < n; i++ {
			createPod(t, cp, plainPod(fmt.Sprintf("%s-%d", prefix, i)))
		}
		var bound []string
		for i := 0; i < n; i++ {
			node := waitScheduled(t, cp, "e2e", fmt.Sprintf("%s-%d", prefix, i), 60*time.Second)
			bound = append(bound, node)
			t.Logf("e2e/%s-%d bound to %s", prefix, i, node)
		}
		return bound
	}

	bound := schedule("before", 3)
	// The scheduler talks to A, and B holds every booking too.
	for i, node := range bound {
		name := fmt.Sprintf("before-%d", i)
		for _, e := range []*extender{a, b} {
			verbs := strings.Join(e.decisionVerbs(t, "e2e", name), " ")
			if !strings.Contains(verbs, "placement.reserve@"+node) {
				t.Errorf("e2e/%s: replica on %d has no booking on %s: %s", name, e.httpPort, node, verbs)
			}
		}
		if verbs := strings.Join(b.decisionVerbs(t, "e2e", name), " "); strings.Contains(verbs, "placement.filter") {
			t.Errorf("e2e/%s: B was asked to filter although the scheduler talks to A: %s", name, verbs)
		}
	}

	for i := 0; i < 6; i++ {
		createPod(t, cp, plainPod(fmt.Sprintf("during-%d", i)))
		if i == 2 {
			a.proc.signal(t, syscall.SIGKILL)
		}
	}
	for i := 0; i < 6; i++ {
		node := waitScheduled(t, cp, "e2e", fmt.Sprintf("during-%d", i), 60*time.Second)
		t.Logf("e2e/during-%d bound to %s", i, node)
	}
	// The plugin's connection reconnects (backoff capped at 1 s) through the
	// Service to the survivor; pods bound meanwhile fail open. From then on the
	// survivor decides: three pods in a row with its filter, score and booking.
	killed := time.Now()
	consulted, k := 0, 0
	for consulted < 3 {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the survivor decided %d pods in a row 30 s after the kill", consulted)
		}
		name := fmt.Sprintf("after-%d", k)
		k++
		createPod(t, cp, plainPod(name))
		node := waitScheduled(t, cp, "e2e", name, 60*time.Second)
		verbs := strings.Join(b.decisionVerbs(t, "e2e", name), " ")
		ok := true
		for _, want := range []string{"placement.filter", "placement.score", "placement.reserve@" + node} {
			ok = ok && strings.Contains(verbs, want)
		}
		if ok {
			consulted++
		} else {
			consulted = 0
		}
		t.Logf("e2e/%s bound to %s; the survivor's decisions: %s", name, node, verbs)
	}
	t.Logf("the survivor decided for the scheduler %v after the kill (%d pods after the burst)",
		time.Since(killed).Round(time.Millisecond), k)
	t.Logf("placement connections: A %d, B %d", svc.connections(addrA), svc.connections(addrB))
}
