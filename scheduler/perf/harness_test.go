package perf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	benchmark "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/ktesting"
	"sigs.k8s.io/yaml"

	"neighborly.dev/scheduler/internal/testpki"
)

// mode is how a test case of performance-config.yaml involves Neighborly,
// told by the test case's name.
type mode string

const (
	modeNone mode = "no extender"
	// The fair baseline: the extender and the simulated fleet run as in the
	// Neighborly modes (the same CPU taken from the scheduler's cores), but
	// kube-scheduler is configured without them and never consults them.
	modeBaseline mode = "fleet, not consulted"
	modeExtender mode = "HTTP extender"
	modePlugin   mode = "framework plugin"
)

var modes = []mode{modeNone, modeBaseline, modeExtender, modePlugin}

// consults tells whether kube-scheduler asks Neighborly in this mode.
func (m mode) consults() bool { return m == modeExtender || m == modePlugin }

// workloadName is what a workload's test name,
// "BenchmarkPerfScheduling/round<N>/<test case>/<workload>", says.
type workloadName struct {
	round              int // 1..
	testCase, workload string
	family             string // the test case without its mode suffix: SchedulingBasic, SchedulingMixed
	mode               mode   // told by the test case's name
}

var roundName = regexp.MustCompile(`^round([1-9][0-9]*)$`)

func parseWorkloadName(testName string) (workloadName, error) {
	parts := strings.Split(testName, "/")
	if len(parts) != 4 || roundName.FindStringSubmatch(parts[1]) == nil {
		return workloadName{}, fmt.Errorf("test name %q is not BenchmarkPerfScheduling/round<N>/<test case>/<workload>", testName)
	}
	n := workloadName{testCase: parts[2], workload: parts[3]}
	n.round, _ = strconv.Atoi(roundName.FindStringSubmatch(parts[1])[1])
	family, suffix, found := strings.Cut(n.testCase, "_")
	n.family = family
	switch {
	case !found:
		n.mode = modeNone
	case suffix == "NeighborlyBaseline":
		n.mode = modeBaseline
	case suffix == "NeighborlyExtender":
		n.mode = modeExtender
	case suffix == "NeighborlyPlugin":
		n.mode = modePlugin
	default:
		return workloadName{}, fmt.Errorf("test case %q: its name must end in _NeighborlyBaseline, _NeighborlyExtender, _NeighborlyPlugin or have no suffix", n.testCase)
	}
	return n, nil
}

// benchHarness holds what the whole run shares and, per workload, the
// Neighborly processes of that workload.
type benchHarness struct {
	root      string // repository root
	buildDir  string // neighborly-extender and neighborly-agent
	helm      string
	outDir    string // the working directory: configs, logs, data items, results
	pki       *testpki.PKI
	profile   bool // CPU and allocation profiles of the test process per workload
	rounds    int  // every test case this many times, round by round
	seed      int64
	orders    map[int][]string // per round, the test cases in the order they ran
	workloads []*workloadRun
	current   *workloadRun
}

// workloadRun is one scheduler_perf workload: its Neighborly processes and,
// once it ended, their figures.
type workloadRun struct {
	testCase, workload string
	family             string
	mode               mode
	dir                string
	extender           *extender
	fleet              *process
	fleetNodes         int
	stats              *neighborlyStats
	skipped            string  // why the workload did not run
	cpuStart           float64 // selfCPUSeconds when the workload began
	round              int     // 1..NEIGHBORLY_BENCH_ROUNDS
	position           int     // its test case's place in the round's order, 1..; 0: unknown
}

// packageDir is this package's directory, the working directory go test
// starts in (newHarness then changes it).
var packageDir = func() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return dir
}()

func newHarness() (*benchHarness, error) {
	pkgDir := packageDir
	root, err := filepath.Abs(filepath.Join(pkgDir, "../.."))
	if err != nil {
		return nil, err
	}
	h := &benchHarness{
		root:     root,
		buildDir: envOr("NEIGHBORLY_BUILD_DIR", filepath.Join(root, "build/default")),
		helm:     os.Getenv("NEIGHBORLY_HELM"),
		outDir:   os.Getenv("NEIGHBORLY_BENCH_OUT"),
		profile:  os.Getenv("NEIGHBORLY_BENCH_CPUPROFILE") == "1",
		rounds:   1,
		seed:     time.Now().UnixNano(),
		orders:   map[int][]string{},
	}
	if v := os.Getenv("NEIGHBORLY_BENCH_ROUNDS"); v != "" {
		if h.rounds, err = strconv.Atoi(v); err != nil || h.rounds < 1 || h.rounds > 20 {
			return nil, fmt.Errorf("NEIGHBORLY_BENCH_ROUNDS=%q: want 1..20", v)
		}
	}
	if v := os.Getenv("NEIGHBORLY_BENCH_SEED"); v != "" {
		if h.seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, fmt.Errorf("NEIGHBORLY_BENCH_SEED=%q: want an integer", v)
		}
	}
	if h.helm == "" {
		return nil, errors.New("NEIGHBORLY_HELM is not set (scripts/helm.sh prints one); the extender mode renders the chart's scheduler configuration with it")
	}
	for _, bin := range []string{h.extenderBin(), h.agentBin()} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%v (make build, or set NEIGHBORLY_BUILD_DIR)", err)
		}
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("scheduler_perf starts etcd from PATH: %v (scripts/bench-scheduler.sh builds it into build/go/bin)", err)
	}
	if h.outDir == "" {
		if h.outDir, err = os.MkdirTemp("", "bench-scheduler-"); err != nil {
			return nil, err
		}
	}
	if h.outDir, err = filepath.Abs(h.outDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(h.outDir, 0o755); err != nil {
		return nil, err
	}
	// scheduler_perf reads every path of its configuration relative to the
	// working directory; the per-workload scheduler configurations are
	// written there too.
	for _, f := range []string{"performance-config.yaml", "templates/pod-default.yaml", "templates/pod-mixed.yaml"} {
		if err := copyFile(filepath.Join(pkgDir, f), filepath.Join(h.outDir, f)); err != nil {
			return nil, err
		}
	}
	if err := os.Chdir(h.outDir); err != nil {
		return nil, err
	}
	if h.pki, err = testpki.New(filepath.Join(h.outDir, "pki")); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	fmt.Printf("bench-scheduler: %s, %s; configs, logs and results in %s; mode order seed %d (NEIGHBORLY_BENCH_SEED)\n",
		h.extenderBin(), h.agentBin(), h.outDir, h.seed)
	return h, nil
}

// extenderBin is $NEIGHBORLY_EXTENDER, else the build directory's.
func (h *benchHarness) extenderBin() string {
	return envOr("NEIGHBORLY_EXTENDER", filepath.Join(h.buildDir, "extender/neighborly-extender"))
}
func (h *benchHarness) agentBin() string {
	return filepath.Join(h.buildDir, "node-agent/neighborly-agent")
}

// preRun runs for each workload before scheduler_perf starts etcd, the API
// server and the scheduler: it starts the extender and writes the scheduler
// configuration the workload's test case names.
func (h *benchHarness) preRun(tCtx ktesting.TContext, w *benchmark.Workload) (func(), error) {
	name, err := parseWorkloadName(tCtx.Name())
	if err != nil {
		return nil, err
	}
	m := name.mode
	run := &workloadRun{testCase: name.testCase, workload: name.workload, family: name.family, mode: m, round: name.round,
		dir: filepath.Join(h.outDir, "logs", fmt.Sprintf("round%d_%s_%s", name.round, name.testCase, name.workload))}
	if err := os.MkdirAll(run.dir, 0o755); err != nil {
		return nil, err
	}
	for i, tc := range h.orders[name.round] {
		if tc == name.testCase {
			run.position = i + 1
		}
	}
	run.cpuStart = selfCPUSeconds()
	h.workloads = append(h.workloads, run)
	h.current = run

	stopProfile := func() {}
	if h.profile {
		f, err := os.Create(filepath.Join(run.dir, "cpu.pprof"))
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		// The allocations too, at the start and the end of the workload
		// (cumulative since the process began: read them with
		// go tool pprof -sample_index=alloc_space -base allocs-start.pprof allocs.pprof).
		writeAllocs := func(name string) error {
			a, err := os.Create(filepath.Join(run.dir, name))
			if err != nil {
				return err
			}
			defer a.Close()
			return pprof.Lookup("allocs").WriteTo(a, 0)
		}
		stopCPU := func() { pprof.StopCPUProfile(); f.Close() }
		if err := writeAllocs("allocs-start.pprof"); err != nil {
			stopCPU()
			return nil, err
		}
		stopProfile = func() {
			stopCPU()
			if err := writeAllocs("allocs.pprof"); err != nil {
				tCtx.Logf("allocation profile: %v", err)
			}
		}
	}

	if m == modeNone {
		return stopProfile, nil
	}
	if m == modePlugin && !h.extenderHasPlacementPort() {
		stopProfile()
		run.skipped = "this build's extender has no placement port (--placement-address)"
		tCtx.Skipf("%s: %s", h.extenderBin(), run.skipped)
	}
	run.extender, err = startExtender(h, run.dir, m == modePlugin)
	if err != nil {
		stopProfile()
		return nil, err
	}
	cleanup := func() {
		stopProfile()
		// scheduler_perf has stopped the scheduler and the API server by
		// now (their cleanups were registered later, so ran first).
		stats, err := run.extender.stats()
		if err != nil {
			tCtx.Errorf("extender figures: %v", err)
		}
		if run.fleet != nil {
			if stats != nil {
				stats.FleetCPUSeconds = run.fleet.cpuSeconds()
			}
			run.fleet.stop()
		}
		if stats != nil {
			stats.ExtenderCPUSeconds = run.extender.proc.cpuSeconds()
			stats.FleetNodes = run.fleetNodes
			stats.ProcessCPUSeconds = -1
			if now := selfCPUSeconds(); now >= 0 && run.cpuStart >= 0 {
				stats.ProcessCPUSeconds = now - run.cpuStart
			}
		}
		run.extender.proc.stop()
		run.stats = stats
		h.current = nil
		// The scheduler never closes its plugins; their gRPC connections
		// would fail scheduler_perf's goroutine-leak check.
		closePlugins()
	}
	if m == modeBaseline {
		return cleanup, nil // scheduler_perf's default configuration: Neighborly runs but is not asked
	}
	if err := h.writeSchedulerConfig(run); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

// extenderHasPlacementPort tells whether this build's extender serves the
// placement service the framework plugin calls.
func (h *benchHarness) extenderHasPlacementPort() bool {
	out, _ := exec.Command(h.extenderBin(), "--help").CombinedOutput()
	return strings.Contains(string(out), "--placement-address")
}

// nodesCreated runs after scheduler_perf created the workload's Nodes: the
// simulated fleet then streams telemetry for each of them by the name the API
// server gave it (node-0-xxxxx, from scheduler_perf's generateName), and the
// workload goes on once the extender holds telemetry for every node.
func (h *benchHarness) nodesCreated(tCtx ktesting.TContext, _ *scheduler.Scheduler, _ *benchmark.Workload, nodes *v1.NodeList) error {
	run := h.current
	if run == nil || run.extender == nil {
		return nil
	}
	if run.fleet != nil {
		return errors.New("a second createNodes op: the fleet streams the first op's nodes only")
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	scenario := filepath.Join(run.dir, "fleet-scenario.yaml")
	if err := writeFleetScenario(scenario, names); err != nil {
		return err
	}
	// The agents stand for processes on other machines: the fleet runs at
	// nice 19. (Not SCHED_IDLE: on this shared VM other people's compilers
	// keep both cores busy, and an idle-class fleet did not connect its
	// 5,000 streams within minutes.)
	fleet, err := startProcess("agent", filepath.Join(run.dir, "agent.log"), "nice",
		"-n", "19", h.agentBin(), "--simulate", scenario,
		"--extender", run.extender.grpcAddr, "--insecure-plaintext",
		"--interval", fleetInterval(len(names)).String(), "--metrics-address", "127.0.0.1:0", "--log-level", "warn")
	if err != nil {
		return err
	}
	run.fleet, run.fleetNodes = fleet, len(names)
	start := time.Now()
	if err := run.extender.waitForFleet(len(names), 3*time.Minute); err != nil {
		return err
	}
	tCtx.Logf("the extender holds telemetry for all %d nodes (%v after the fleet started)", len(names), time.Since(start).Round(time.Millisecond))
	return nil
}

// fleetInterval is the simulated fleet's report interval: 1 s (the agent's
// default) up to 500 nodes, beyond it the interval that keeps the fleet at
// fleetReportsPerSecond. With 1 s at 5,000 nodes the extender on this 2-core
// VM fell behind and its ingest pacer slowed the agents in doublings over
// the first minute (1 s to 30 s), and where a round's measured pods fell
// in that ramp differed from mode to mode and round to round (issue 25: a
// plugin round whose ramp began at 0.27 s measured 83 % against 90-95 %).
// A steady load the extender keeps up with is the same in every mode.
func fleetInterval(nodes int) time.Duration {
	d := time.Duration(nodes) * time.Second / fleetReportsPerSecond
	return max(d, time.Second)
}

const fleetReportsPerSecond = 500

// writeSchedulerConfig renders the chart's scheduler configuration (mode
// second-scheduler, the chart's default values; scheduler.integration=plugin
// for the plugin mode) with the extender's loopback addresses, and keeps its
// extenders entry, or its Neighborly plugin entry and pluginConfig, verbatim
// but for the directory of the TLS files (in a pod the Secret is mounted at
// /etc/neighborly-tls) and the plugin's address. The profile is renamed to
// scheduler_perf's default-scheduler, whose attempts its throughput collector
// counts. Leader election and the client connection of the rendered file do
// not apply to scheduler_perf's in-process scheduler.
func (h *benchHarness) writeSchedulerConfig(run *workloadRun) error {
	args := []string{"template", "neighborly", filepath.Join(h.root, "charts/neighborly"),
		"--namespace", "neighborly", "--show-only", "templates/scheduler-configmap.yaml",
		"--set", "schedulerExtender.urlPrefix=https://" + run.extender.httpAddr}
	target := "scheduler-config-extender.yaml"
	if run.mode == modePlugin {
		// The chart checks the cluster's minor against the plugin's.
		k8s, err := pinnedKubeVersion()
		if err != nil {
			return err
		}
		args = append(args, "--set", "scheduler.integration=plugin", "--kube-version", k8s)
		target = "scheduler-config-plugin.yaml"
	}
	out, err := exec.Command(h.helm, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	config, err := schedulerConfigFromChart(out, h.pki.SchedulerDir, run.extender.placementAddr)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(run.dir, "scheduler-config.yaml"), config, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.outDir, target), config, 0o644)
}

// pinnedKubeVersion is the k8s.io/kubernetes release scheduler/go.mod pins,
// which scheduler_perf's API server and scheduler are.
func pinnedKubeVersion() (string, error) {
	goMod, err := os.ReadFile(filepath.Join(packageDir, "../go.mod"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(goMod)
	if m == nil {
		return "", errors.New("scheduler/go.mod requires no k8s.io/kubernetes version")
	}
	return string(m[1]), nil
}

// schedulerConfigFromChart turns the chart's rendered scheduler ConfigMap into
// the KubeSchedulerConfiguration scheduler_perf loads: the chart's one
// profile, renamed default-scheduler, with its plugins and pluginConfig (the
// Neighborly plugin's address set to placementAddr when that is not empty),
// the chart's extenders, percentageOfNodesToScore when the chart sets one,
// and the TLS files under tlsDir.
func schedulerConfigFromChart(configMap []byte, tlsDir, placementAddr string) ([]byte, error) {
	var cm v1.ConfigMap
	if err := yaml.Unmarshal(configMap, &cm); err != nil {
		return nil, fmt.Errorf("the chart's scheduler ConfigMap: %w", err)
	}
	rendered, ok := cm.Data["scheduler-config.yaml"]
	if !ok {
		return nil, fmt.Errorf("the chart's scheduler ConfigMap has no scheduler-config.yaml:\n%s", configMap)
	}
	var chart map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(rendered, "/etc/neighborly-tls/", tlsDir+"/")), &chart); err != nil {
		return nil, fmt.Errorf("the rendered scheduler config: %w", err)
	}
	profiles, _ := chart["profiles"].([]any)
	if len(profiles) != 1 {
		return nil, fmt.Errorf("the rendered scheduler config has %d profiles, want 1:\n%s", len(profiles), rendered)
	}
	profile, _ := profiles[0].(map[string]any)
	if profile == nil {
		return nil, fmt.Errorf("the rendered profile is not a map:\n%s", rendered)
	}
	profile["schedulerName"] = "default-scheduler"
	config := map[string]any{
		"apiVersion": chart["apiVersion"],
		"kind":       chart["kind"],
		"profiles":   []any{profile},
	}
	extenders, _ := chart["extenders"].([]any)
	if len(extenders) > 0 {
		config["extenders"] = extenders
	}
	if placementAddr != "" {
		if err := setPluginAddress(profile, placementAddr); err != nil {
			return nil, fmt.Errorf("%w:\n%s", err, rendered)
		}
	} else if len(extenders) != 1 {
		return nil, fmt.Errorf("the rendered scheduler config has no single extenders entry:\n%s", rendered)
	}
	if p, ok := chart["percentageOfNodesToScore"]; ok {
		config["percentageOfNodesToScore"] = p
	}
	return yaml.Marshal(config)
}

// setPluginAddress sets the address in the profile's Neighborly pluginConfig
// (the chart renders the extender Service's cluster DNS name there).
func setPluginAddress(profile map[string]any, address string) error {
	entries, _ := profile["pluginConfig"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		if entry["name"] != "Neighborly" {
			continue
		}
		args, ok := entry["args"].(map[string]any)
		if !ok {
			return fmt.Errorf("the rendered Neighborly pluginConfig has no args")
		}
		args["address"] = address
		// NEIGHBORLY_PLUGIN_STREAMED=0: the plugin makes its calls in every
		// cycle (streamedVerdicts: false) to compare with the streamed path.
		switch v := os.Getenv("NEIGHBORLY_PLUGIN_STREAMED"); v {
		case "":
		case "0", "false":
			args["streamedVerdicts"] = false
		case "1", "true":
			args["streamedVerdicts"] = true
		default:
			return fmt.Errorf("NEIGHBORLY_PLUGIN_STREAMED=%q: want 0 or 1", v)
		}
		// NEIGHBORLY_PLUGIN_LINGER=DURATION: the plugin's bookingLinger
		// (how long bookings are held back to go together; "0s": at once).
		if v := os.Getenv("NEIGHBORLY_PLUGIN_LINGER"); v != "" {
			if _, err := time.ParseDuration(v); err != nil {
				return fmt.Errorf("NEIGHBORLY_PLUGIN_LINGER=%q: %w", v, err)
			}
			args["bookingLinger"] = v
		}
		return nil
	}
	return fmt.Errorf("the rendered profile has no Neighborly pluginConfig")
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

var (
	listening          = regexp.MustCompile(`listening http=(\S+) grpc=(\S+)(.*)`)
	placementListening = regexp.MustCompile(`\bplacement=(\S+)`)
)

// extender is a running neighborly-extender: HTTPS with client certificates
// for the scheduler (as the chart sets it up), plaintext telemetry on loopback.
type extender struct {
	proc               *process
	httpAddr, grpcAddr string
	placementAddr      string // the plugin's gRPC placement service; empty: none
	client             *http.Client
}

// startExtender starts the extender with the chart's TLS set-up: HTTPS with
// client certificates for the scheduler verbs and, with placement, the
// placement service on a free loopback port with the same certificates
// (client certificates required).
func startExtender(h *benchHarness, dir string, placement bool) (*extender, error) {
	config := filepath.Join(dir, "extender.yaml")
	// grpc.ingestScheduling: nice, not the default idle: the default lets
	// telemetry go stale on a machine whose CPUs other processes saturate
	// (docs/configuration.md), which this shared VM's are, by processes
	// that are not part of the benchmark.
	yaml := fmt.Sprintf("http:\n  tls:\n    certFile: %s\n    keyFile: %s\n    clientCaFile: %s\n    allowedClientNames: [%s]\ngrpc:\n  ingestScheduling: nice\n",
		h.pki.ServerCert, h.pki.ServerKey, h.pki.CAFile, testpki.SchedulerName)
	if placement {
		yaml += fmt.Sprintf("placement:\n  address: 127.0.0.1:0\n  tls:\n    certFile: %s\n    keyFile: %s\n    caFile: %s\n    allowedClientNames: [%s]\n",
			h.pki.ServerCert, h.pki.ServerKey, h.pki.CAFile, testpki.SchedulerName)
	}
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	proc, err := startProcess("extender", filepath.Join(dir, "extender.log"), h.extenderBin(),
		"--config", config, "--http-address", "127.0.0.1:0", "--grpc-address", "127.0.0.1:0",
		"--grpc-insecure-plaintext", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	m, err := proc.waitForLog(listening, 30*time.Second)
	if err != nil {
		proc.stop()
		return nil, err
	}
	placementAddr := ""
	if placement {
		p := placementListening.FindStringSubmatch(m[3])
		if p == nil {
			proc.stop()
			return nil, fmt.Errorf("the extender's listening line names no placement port: %q", m[0])
		}
		placementAddr = p[1]
	}
	// No keep-alive: scheduler_perf checks that no goroutine outlives a
	// workload, and an idle connection keeps two.
	transport := &http.Transport{TLSClientConfig: h.pki.Client.Clone(), DisableKeepAlives: true}
	return &extender{proc: proc, httpAddr: m[1], grpcAddr: m[2], placementAddr: placementAddr,
		client: &http.Client{Timeout: 10 * time.Second, Transport: transport}}, nil
}

func (e *extender) get(path string) ([]byte, error) {
	resp, err := e.client.Get("https://" + e.httpAddr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}

// waitForFleet waits until the extender holds telemetry for n nodes.
func (e *extender) waitForFleet(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var nodes []json.RawMessage
		body, err := e.get("/v1/nodes")
		if err == nil {
			err = json.Unmarshal(body, &nodes)
		}
		if err == nil && len(nodes) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the extender holds telemetry for %d of %d nodes after %v (last error: %v)", len(nodes), n, timeout, err)
		}
		if e.proc.exited() {
			return fmt.Errorf("the extender exited: %s", tail(e.proc.LogPath, 20))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (e *extender) stats() (*neighborlyStats, error) {
	body, err := e.get("/metrics")
	if err != nil {
		return nil, err
	}
	return parseExtenderMetrics(string(body))
}
