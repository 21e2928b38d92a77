package perf

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestParseWorkloadName(t *testing.T) {
	for name, want := range map[string]workloadName{
		"BenchmarkPerfScheduling/round1/SchedulingBasic/500Nodes":                     {1, "SchedulingBasic", "500Nodes", "SchedulingBasic", modeNone},
		"BenchmarkPerfScheduling/round2/SchedulingBasic_NeighborlyExtender/5000Nodes": {2, "SchedulingBasic_NeighborlyExtender", "5000Nodes", "SchedulingBasic", modeExtender},
		"BenchmarkPerfScheduling/round12/SchedulingBasic_NeighborlyPlugin/5Nodes":     {12, "SchedulingBasic_NeighborlyPlugin", "5Nodes", "SchedulingBasic", modePlugin},
		"BenchmarkPerfScheduling/round3/SchedulingMixed_NeighborlyBaseline/5000Nodes": {3, "SchedulingMixed_NeighborlyBaseline", "5000Nodes", "SchedulingMixed", modeBaseline},
	} {
		if got, err := parseWorkloadName(name); err != nil || got != want {
			t.Errorf("parseWorkloadName(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	for _, bad := range []string{"BenchmarkPerfScheduling", "BenchmarkPerfScheduling/SchedulingBasic/5Nodes",
		"BenchmarkPerfScheduling/round0/SchedulingBasic/5Nodes", "BenchmarkPerfScheduling/round1/SchedulingBasic_Other/5Nodes"} {
		if _, err := parseWorkloadName(bad); err == nil {
			t.Errorf("parseWorkloadName(%q) accepted", bad)
		}
	}
}

// The scheduler configuration comes from the chart as rendered by helm: its
// extenders entry verbatim (TLS files moved), one default-scheduler profile.
func TestSchedulerConfigFromTheChart(t *testing.T) {
	helm := os.Getenv("NEIGHBORLY_HELM")
	if helm == "" {
		t.Skip("NEIGHBORLY_HELM is not set (scripts/helm.sh prints one)")
	}
	render := func(extra ...string) []byte {
		args := append([]string{"template", "neighborly", "../../charts/neighborly", "--namespace", "neighborly",
			"--show-only", "templates/scheduler-configmap.yaml", "--set", "schedulerExtender.urlPrefix=https://127.0.0.1:4321"}, extra...)
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm: %v\n%s", err, out)
		}
		return out
	}
	data, err := schedulerConfigFromChart(render(), "/tmp/tls", "")
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		Kind     string `json:"kind"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
		} `json:"profiles"`
		Extenders []map[string]any `json:"extenders"`
	}
	if err := yaml.Unmarshal(data, &config); err != nil {
		t.Fatal(err)
	}
	if config.Kind != "KubeSchedulerConfiguration" || len(config.Profiles) != 1 || config.Profiles[0].SchedulerName != "default-scheduler" {
		t.Errorf("not one default-scheduler profile:\n%s", data)
	}
	if len(config.Extenders) != 1 {
		t.Fatalf("extenders:\n%s", data)
	}
	e := config.Extenders[0]
	for key, want := range map[string]any{"urlPrefix": "https://127.0.0.1:4321", "filterVerb": "filter",
		"prioritizeVerb": "prioritize", "nodeCacheCapable": true, "ignorable": true, "enableHTTPS": true} {
		if e[key] != want {
			t.Errorf("extender %s = %v, want %v", key, e[key], want)
		}
	}
	if tls, _ := e["tlsConfig"].(map[string]any); tls["caFile"] != "/tmp/tls/ca.crt" || tls["certFile"] != "/tmp/tls/tls.crt" {
		t.Errorf("tlsConfig not moved to /tmp/tls: %v", e["tlsConfig"])
	}
	if _, err := schedulerConfigFromChart([]byte("kind: ConfigMap\ndata: {}\n"), "/x", ""); err == nil {
		t.Error("a ConfigMap without scheduler-config.yaml was accepted")
	}

	// The plugin mode: the chart's Neighborly plugin entry and args, the
	// address pointed at the placement port, no extenders.
	k8s, err := pinnedKubeVersion()
	if err != nil {
		t.Fatal(err)
	}
	data, err = schedulerConfigFromChart(render("--set", "scheduler.integration=plugin", "--kube-version", k8s), "/tmp/tls", "127.0.0.1:5555")
	if err != nil {
		t.Fatal(err)
	}
	var plugin struct {
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			Plugins       struct {
				MultiPoint struct {
					Enabled []struct {
						Name   string `json:"name"`
						Weight int    `json:"weight"`
					} `json:"enabled"`
				} `json:"multiPoint"`
			} `json:"plugins"`
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
		Extenders []any `json:"extenders"`
	}
	if err := yaml.Unmarshal(data, &plugin); err != nil {
		t.Fatal(err)
	}
	if len(plugin.Profiles) != 1 || plugin.Profiles[0].SchedulerName != "default-scheduler" || len(plugin.Extenders) != 0 {
		t.Fatalf("plugin mode config:\n%s", data)
	}
	pr := plugin.Profiles[0]
	if len(pr.Plugins.MultiPoint.Enabled) != 1 || pr.Plugins.MultiPoint.Enabled[0].Name != "Neighborly" || pr.Plugins.MultiPoint.Enabled[0].Weight != 5 {
		t.Errorf("plugins: %+v", pr.Plugins)
	}
	if len(pr.PluginConfig) != 1 || pr.PluginConfig[0].Args["address"] != "127.0.0.1:5555" || pr.PluginConfig[0].Args["caFile"] != "/tmp/tls/ca.crt" {
		t.Errorf("pluginConfig: %+v", pr.PluginConfig)
	}
}

// The generated fleet is a valid scenario for the real agent, with one
// report per node name, in order.
func TestFleetScenarioIsReadByTheAgent(t *testing.T) {
	agent := filepath.Join(envOr("NEIGHBORLY_BUILD_DIR", "../../build/default"), "node-agent/neighborly-agent")
	if _, err := os.Stat(agent); err != nil {
		t.Skipf("no agent binary (make build): %v", err)
	}
	names := []string{"scheduler-perf-a1b2c", "scheduler-perf-x", "scheduler-perf-y", "scheduler-perf-z", "scheduler-perf-q"}
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := writeFleetScenario(path, names); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(agent, "--simulate", path, "--once", "--output", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("agent refused the scenario: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(names) {
		t.Fatalf("%d reports for %d nodes:\n%s", len(lines), len(names), out)
	}
	for i, line := range lines {
		var report struct {
			NodeName string           `json:"nodeName"`
			Pods     []map[string]any `json:"pods"`
		}
		if err := json.Unmarshal([]byte(line), &report); err != nil {
			t.Fatal(err)
		}
		if report.NodeName != names[i] {
			t.Errorf("report %d is for %q, want %q", i, report.NodeName, names[i])
		}
		if wantPods := map[bool]int{true: 0, false: 1}[i%4 == 0]; len(report.Pods) != wantPods {
			t.Errorf("%s: %d pods, want %d", names[i], len(report.Pods), wantPods)
		}
	}
}

const extenderMetrics = `# HELP neighborly_extender_http_requests_total Scheduler requests by HTTP status.
neighborly_extender_http_requests_total{verb="filter",code="200"} 1500
neighborly_extender_http_requests_total{verb="prioritize",code="200"} 1498
neighborly_extender_http_requests_total{verb="prioritize",code="503"} 2
neighborly_extender_http_request_duration_seconds_bucket{verb="filter",le="0.0001"} 0
neighborly_extender_http_request_duration_seconds_bucket{verb="filter",le="0.0005"} 1000
neighborly_extender_http_request_duration_seconds_bucket{verb="filter",le="0.001"} 1500
neighborly_extender_http_request_duration_seconds_bucket{verb="filter",le="+Inf"} 1500
neighborly_extender_http_request_duration_seconds_sum{verb="filter"} 0.6
neighborly_extender_http_request_duration_seconds_count{verb="filter"} 1500
neighborly_fleet_nodes{telemetry="aging"} 3
neighborly_fleet_nodes{telemetry="fresh"} 4990
neighborly_fleet_nodes{telemetry="stale"} 7
neighborly_decisions_without_telemetry_total{verb="filter"} 3
neighborly_decisions_without_telemetry_total{verb="prioritize"} 4
neighborly_ingest_reports_total{result="accepted"} 90000
neighborly_ingest_reports_total{result="rejected"} 7
neighborly_placement_requests_total{method="Filter",code="OK"} 20
neighborly_placement_verdict_refreshes_total{kind="full"} 3
neighborly_placement_verdict_refreshes_total{kind="incremental"} 97
neighborly_placement_verdict_nodes_total{why="changed"} 15000
neighborly_placement_verdict_nodes_total{why="expired"} 300
neighborly_placement_verdict_nodes_total{why="regiven"} 100
neighborly_placement_requests_total{method="Reserve",code="DEADLINE_EXCEEDED"} 1
neighborly_placement_request_duration_seconds_bucket{method="Filter",le="0.001"} 20
neighborly_placement_request_duration_seconds_bucket{method="Filter",le="+Inf"} 20
neighborly_placement_request_duration_seconds_sum{method="Filter"} 0.01
neighborly_placement_request_duration_seconds_count{method="Filter"} 20
`

func TestParseExtenderMetrics(t *testing.T) {
	s, err := parseExtenderMetrics(extenderMetrics)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests["filter/200"] != 1500 || s.Requests["prioritize/200"] != 1498 || s.Requests["prioritize/503"] != 2 {
		t.Errorf("requests %v", s.Requests)
	}
	if s.Requests["placement Filter/OK"] != 20 || s.Requests["placement Reserve/DEADLINE_EXCEEDED"] != 1 {
		t.Errorf("placement requests %v", s.Requests)
	}
	if got := s.Durations["placement Filter"].mean(); math.Abs(got-0.0005) > 1e-12 {
		t.Errorf("placement Filter mean %v", got)
	}
	if s.DecisionsWithoutTelemetry != 7 || s.ReportsAccepted != 90000 {
		t.Errorf("without telemetry %v, accepted %v", s.DecisionsWithoutTelemetry, s.ReportsAccepted)
	}
	if s.VerdictRefreshes["full"] != 3 || s.VerdictRefreshes["incremental"] != 97 || s.VerdictNodes != 15400 ||
		s.VerdictNodesWhy["expired"] != 300 || s.VerdictNodesWhy["regiven"] != 100 {
		t.Errorf("verdict refreshes %v, nodes %v %v", s.VerdictRefreshes, s.VerdictNodes, s.VerdictNodesWhy)
	}
	f := s.Durations["filter"]
	if got := f.mean(); math.Abs(got-0.0004) > 1e-12 {
		t.Errorf("mean %v", got)
	}
	// Rank 750 of 1,500 lies 3/4 into the (0.1 ms, 0.5 ms] bucket.
	if got := f.quantile(0.5); math.Abs(got-0.0004) > 1e-12 {
		t.Errorf("p50 %v, want 0.0004", got)
	}
	// Rank 1,485: 485 of the 500 in (0.5 ms, 1 ms].
	if got := f.quantile(0.99); math.Abs(got-(0.0005+0.0005*485/500)) > 1e-12 {
		t.Errorf("p99 %v", got)
	}
	if s.Telemetry["fresh"] != 4990 || s.Telemetry["aging"] != 3 || s.Telemetry["stale"] != 7 {
		t.Errorf("telemetry states %v", s.Telemetry)
	}
	// An extender from before issue 16's renames.
	old, err := parseExtenderMetrics("neighborly_extender_requests_total{verb=\"filter\",code=\"200\"} 9\n" +
		"neighborly_http_request_duration_seconds_count{verb=\"filter\"} 9\n")
	if err != nil || old.Requests["filter/200"] != 9 || old.Durations["filter"].Count != 9 || old.Telemetry != nil {
		t.Errorf("old names: %+v, %v", old, err)
	}
	if _, err := parseExtenderMetrics("process_threads 12\n"); err == nil {
		t.Error("metrics without the request counter were accepted")
	}
}

func TestQuantileInTheInfBucketIsTheLargestBound(t *testing.T) {
	h := &histogram{Bounds: []float64{0.001, math.Inf(1)}, Counts: []float64{1, 10}, Count: 10}
	if got := h.quantile(0.99); got != 0.001 {
		t.Errorf("p99 %v, want 0.001", got)
	}
	if got := (&histogram{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty histogram p50 %v, want NaN", got)
	}
}

func TestCPUSecondsFromStat(t *testing.T) {
	// pid (comm with spaces) state ppid ... utime=250 stime=50 (fields 14, 15).
	stat := "4242 (neighborly ext) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 9 0 12345 1000 200"
	if got := cpuSecondsFromStat(stat); got != 3 {
		t.Errorf("cpu seconds %v, want 3", got)
	}
	if got := cpuSecondsFromStat("garbage"); got != -1 {
		t.Errorf("garbage gave %v", got)
	}
}

func TestRenderTablesRatiosAndTargets(t *testing.T) {
	runs := []*workloadRun{
		{testCase: "SchedulingBasic", workload: "5000Nodes", mode: modeNone, round: 1},
		{testCase: "SchedulingBasic_NeighborlyExtender", workload: "5000Nodes", mode: modeExtender, round: 1,
			stats: &neighborlyStats{Requests: map[string]float64{"filter/200": 10, "prioritize/200": 10}, FleetNodes: 5000}},
		{testCase: "SchedulingBasic_NeighborlyPlugin", workload: "5000Nodes", mode: modePlugin, round: 1, skipped: "no placement port"},
	}
	items := []dataItem{
		testItem("SchedulingBasic", "SchedulingThroughput", 200),
		testItem("SchedulingBasic_NeighborlyExtender", "SchedulingThroughput", 140),
		testItem("SchedulingBasic_NeighborlyExtender", "scheduler_scheduling_attempt_duration_seconds", 7.25, "result", "scheduled"),
	}
	out := renderTables(runs, map[int][]dataItem{1: items})
	wantLines(t, out,
		"| SchedulingBasic | 5000Nodes | no extender | 1 | - | 200.0 | 200.0 | 200.0 | 200.0 | - | 100 % |",
		"| SchedulingBasic | 5000Nodes | HTTP extender | 1 | - | 140.0 | 140.0 | 140.0 | 140.0 | - | 70 % | - / - | - | 7.2 / 7.2 |",
		"| SchedulingBasic | 5000Nodes | HTTP extender | 1 | 5000 | 10 / 10 | - | 0 |",
		"| 0 | - | 0 |",
		"- SchedulingBasic, HTTP extender >= 75 %: not measured in this run (no fair baseline in this run)",
		"| SchedulingBasic | 5000Nodes | framework plugin | 1 | - | not run: no placement port |",
		"- SchedulingBasic, framework plugin >= 95 %: not measured in this run (no placement port)",
	)
}

// The CPU table sums a workload's three processes and compares the same
// round's fair baseline with each mode, then the rounds' mean and spread; a
// run whose process CPU could not be read (-1) has no row.
func TestRenderTablesComparesTheWorkloadsCPU(t *testing.T) {
	run := func(m mode, round int, process, extender, fleet float64) *workloadRun {
		testCase := "SchedulingBasic_NeighborlyBaseline"
		if m == modePlugin {
			testCase = "SchedulingBasic_NeighborlyPlugin"
		}
		return &workloadRun{testCase: testCase, family: "SchedulingBasic", workload: "5000Nodes", mode: m, round: round,
			stats: &neighborlyStats{ProcessCPUSeconds: process, ExtenderCPUSeconds: extender, FleetCPUSeconds: fleet}}
	}
	runs := []*workloadRun{
		run(modeBaseline, 1, 80, 3, 7), run(modePlugin, 1, 84, 7.5, 8.5),
		run(modeBaseline, 2, 70, 3, 7), run(modePlugin, 2, -1, 7, 8),
		run(modeBaseline, 3, 70, 3, 7), run(modePlugin, 3, 70, 5, 5),
	}
	out := renderTables(runs, map[int][]dataItem{})
	wantLines(t, out,
		"| SchedulingBasic | 5000Nodes | fleet, not consulted | 1 | 80.0 | 3.0 | 7.0 | 90.0 | 100 % |",
		"| SchedulingBasic | 5000Nodes | framework plugin | 1 | 84.0 | 7.5 | 8.5 | 100.0 | 90 % |",
		"| SchedulingBasic | 5000Nodes | fleet, not consulted | 2 | 70.0 | 3.0 | 7.0 | 80.0 | 100 % |",
		// Rounds 1 and 3: 90 % and 100 %.
		"| SchedulingBasic | 5000Nodes | framework plugin | all 2 | | | | | 95 % (90-100 %, std dev 7 points) |",
	)
	if strings.Contains(out, "| SchedulingBasic | 5000Nodes | framework plugin | 2 | -1.0") {
		t.Errorf("a run without its process CPU has a CPU row:\n%s", out)
	}
}

// With several rounds each row is compared with the same round's fair
// baseline and no-extender rows, the spread is that of the rounds, and the
// targets use the mean of the rounds against the fair baseline; the two
// families are told apart.
func TestRenderTablesRoundsAgainstTheFairBaseline(t *testing.T) {
	var runs []*workloadRun
	for round := 1; round <= 3; round++ {
		for _, family := range []string{"SchedulingBasic", "SchedulingMixed"} {
			runs = append(runs,
				&workloadRun{testCase: family + "_NeighborlyExtender", family: family, workload: "5000Nodes", mode: modeExtender, round: round, position: 1},
				&workloadRun{testCase: family, family: family, workload: "5000Nodes", mode: modeNone, round: round, position: 2},
				&workloadRun{testCase: family + "_NeighborlyBaseline", family: family, workload: "5000Nodes", mode: modeBaseline, round: round, position: 3})
		}
	}
	tp := func(tc string, avg float64) dataItem {
		return dataItem{Labels: map[string]string{"Metric": "SchedulingThroughput", "Name": "BenchmarkPerfScheduling/" + tc + "/5000Nodes/"},
			Data: map[string]float64{"Average": avg}}
	}
	rounds := map[int][]dataItem{
		1: {tp("SchedulingBasic", 250), tp("SchedulingBasic_NeighborlyBaseline", 200), tp("SchedulingBasic_NeighborlyExtender", 160),
			tp("SchedulingMixed", 100), tp("SchedulingMixed_NeighborlyBaseline", 100), tp("SchedulingMixed_NeighborlyExtender", 50)},
		2: {tp("SchedulingBasic", 120), tp("SchedulingBasic_NeighborlyBaseline", 100), tp("SchedulingBasic_NeighborlyExtender", 90),
			tp("SchedulingMixed", 100), tp("SchedulingMixed_NeighborlyBaseline", 100), tp("SchedulingMixed_NeighborlyExtender", 60)},
		3: {tp("SchedulingBasic", 210), tp("SchedulingBasic_NeighborlyBaseline", 150), tp("SchedulingBasic_NeighborlyExtender", 105),
			tp("SchedulingMixed", 100), tp("SchedulingMixed_NeighborlyBaseline", 100), tp("SchedulingMixed_NeighborlyExtender", 70)},
	}
	out := renderTables(runs, rounds)
	wantLines(t, out,
		"| SchedulingBasic | 5000Nodes | HTTP extender | 1 | 1 | 160.0 | 0.0 | 0.0 | 0.0 | 80 % | 64 % |",
		"| SchedulingBasic | 5000Nodes | HTTP extender | 2 | 1 | 90.0 |",
		"| SchedulingBasic | 5000Nodes | fleet, not consulted | 3 | 3 | 150.0 |",
		// Per-round ratios 80, 90, 70 %: mean 80, sample std dev 10 points;
		// ratio of the means 355/450.
		"| SchedulingBasic | 5000Nodes | HTTP extender | 3 | 118.3 | 90.0-160.0 | 80 % | 70-90 % | 10 points | 79 % | 50-75 % |",
		"| SchedulingMixed | 5000Nodes | HTTP extender | 3 | 60.0 | 50.0-70.0 | 60 % | 50-70 % | 10 points | 60 % | 50-70 % |",
		"- SchedulingBasic, HTTP extender >= 75 %: 79 % (118.3 vs 150.0 pods/s, 3 and 3 rounds), met",
		"- SchedulingMixed, HTTP extender >= 75 %: 60 % (60.0 vs 100.0 pods/s, 3 and 3 rounds), MISSED by 15 points",
		"- SchedulingBasic, framework plugin >= 95 %: not measured in this run",
	)
}

// Each round's configuration holds every test case of performance-config.yaml
// (anchors resolved) in an order drawn from the seed and the round: the same
// for the same seed, and not one fixed order across rounds.
func TestRoundConfigsShuffleTheTestCases(t *testing.T) {
	src, err := os.ReadFile("performance-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var original []map[string]any
	if err := yaml.Unmarshal(src, &original); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, c := range original {
		data, _ := json.Marshal(c)
		want[c["name"].(string)] = string(data)
	}
	for _, family := range []string{"SchedulingBasic", "SchedulingMixed"} {
		for _, suffix := range []string{"", "_NeighborlyBaseline", "_NeighborlyExtender", "_NeighborlyPlugin"} {
			if _, ok := want[family+suffix]; !ok {
				t.Errorf("performance-config.yaml has no test case %s%s", family, suffix)
			}
		}
	}
	h := &benchHarness{outDir: t.TempDir(), seed: 42}
	if err := copyFile("performance-config.yaml", filepath.Join(h.outDir, "performance-config.yaml")); err != nil {
		t.Fatal(err)
	}
	orders := map[string]bool{}
	firsts := map[string]bool{}
	for round := 1; round <= 12; round++ {
		name, order, err := h.roundConfig(round)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(h.outDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var cases []map[string]any
		if err := yaml.Unmarshal(data, &cases); err != nil {
			t.Fatal(err)
		}
		if len(cases) != len(want) || len(order) != len(want) {
			t.Fatalf("round %d: %d test cases (order %v), want %d", round, len(cases), order, len(want))
		}
		for i, c := range cases {
			got, _ := json.Marshal(c)
			if name := c["name"].(string); want[name] != string(got) || order[i] != name {
				t.Errorf("round %d: test case %d (%s, order says %s) changed:\n%s\nwant\n%s", round, i, name, order[i], got, want[name])
			}
		}
		orders[strings.Join(order, ",")] = true
		firsts[order[0]] = true
		again, _, _ := shuffledConfig(src, rand.New(rand.NewSource(h.seed+int64(round))))
		if string(again) != string(data) {
			t.Errorf("round %d: the same seed gave another order", round)
		}
	}
	if len(orders) < 10 || len(firsts) < 3 {
		t.Errorf("12 rounds ran %d distinct orders with %d distinct first test cases", len(orders), len(firsts))
	}
	if _, _, err := shuffledConfig([]byte("- {workloads: []}\n"), rand.New(rand.NewSource(1))); err == nil {
		t.Error("a test case without a name was accepted")
	}
	if _, _, err := shuffledConfig([]byte("name: [\n"), rand.New(rand.NewSource(1))); err == nil {
		t.Error("broken YAML was accepted")
	}
}

// The mixed workload's template, rendered as scheduler_perf renders it
// (text/template with its Mod and AddInt), gives valid pods of the intended
// shapes in the intended shares, interleaved.
func TestMixedPodTemplate(t *testing.T) {
	text, err := os.ReadFile("templates/pod-mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	toInt := func(v any) int {
		switch n := v.(type) {
		case int:
			return n
		case float64:
			return int(n)
		}
		t.Fatalf("not a number: %v", v)
		return 0
	}
	funcs := template.FuncMap{
		"Mod": func(a, b any) int { return toInt(a) % toInt(b) },
		"AddInt": func(numbers ...any) int {
			sum := 0
			for _, n := range numbers {
				sum += toInt(n)
			}
			return sum
		},
	}
	tmpl, err := template.New("pod").Funcs(funcs).Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]int{}
	firstTwenty := map[string]bool{}
	memories := map[string]bool{}
	const pods = 200
	for i := 0; i < pods; i++ {
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, map[string]any{"Index": i, "Count": pods}); err != nil {
			t.Fatal(err)
		}
		var pod v1.Pod
		if err := yaml.UnmarshalStrict(buf.Bytes(), &pod); err != nil {
			t.Fatalf("pod %d: %v\n%s", i, err, buf.String())
		}
		c := pod.Spec.Containers[0].Resources
		if c.Requests.Cpu().Cmp(*c.Limits.Cpu()) != 0 || c.Requests.Memory().Cmp(*c.Limits.Memory()) != 0 {
			t.Errorf("pod %d: requests %v differ from limits %v", i, c.Requests, c.Limits)
		}
		shape := "standard"
		switch {
		case pod.Annotations["neighborly.io/max-slowdown"] != "":
			shape = "refused everywhere"
		case pod.Annotations["neighborly.io/class"] == "latency-critical":
			shape = "latency-critical"
		case pod.Labels["workload-type"] == "batch":
			shape = "batch"
		case c.Requests.Cpu().MilliValue() == 1000:
			shape = "pinned"
		case c.Requests.Memory().String() != "500Mi":
			shape = "unique"
			if memories[c.Requests.Memory().String()] {
				t.Errorf("pod %d: memory %v repeats", i, c.Requests.Memory())
			}
			memories[c.Requests.Memory().String()] = true
		}
		shapes[shape]++
		if i < 20 {
			firstTwenty[shape] = true
		}
	}
	if len(firstTwenty) != 6 {
		t.Errorf("the first 20 pods have %d of the 6 shapes: %v", len(firstTwenty), firstTwenty)
	}
	for shape, percent := range map[string]int{"standard": 45, "latency-critical": 15, "batch": 15, "pinned": 10, "refused everywhere": 5, "unique": 10} {
		if got := shapes[shape] * 100 / pods; got != percent {
			t.Errorf("%s: %d %% of the pods, want %d %% (%v)", shape, got, percent, shapes)
		}
	}
}

func TestFleetIntervalKeepsTheReportRateSteady(t *testing.T) {
	for _, c := range []struct {
		nodes int
		want  time.Duration
	}{{5, time.Second}, {500, time.Second}, {1000, 2 * time.Second}, {5000, 10 * time.Second}} {
		if got := fleetInterval(c.nodes); got != c.want {
			t.Errorf("fleetInterval(%d) = %v, want %v", c.nodes, got, c.want)
		}
	}
}

// wantLines fails t for each of lines that out does not contain.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// A plugin row shows the plugin's mean round trips by method and its cycles'
// mean waits for acks by extension point; what was not measured is "-".
func TestRenderTablesShowsThePluginsCallsAndWaits(t *testing.T) {
	runs := []*workloadRun{
		{testCase: "SchedulingMixed_NeighborlyBaseline", family: "SchedulingMixed", workload: "5000Nodes", mode: modeBaseline, round: 1,
			stats: &neighborlyStats{FleetNodes: 5000}},
		{testCase: "SchedulingMixed_NeighborlyPlugin", family: "SchedulingMixed", workload: "5000Nodes", mode: modePlugin, round: 1,
			stats: &neighborlyStats{FleetNodes: 5000}},
	}
	items := []dataItem{
		testItem("SchedulingMixed_NeighborlyBaseline", "SchedulingThroughput", 200),
		testItem("SchedulingMixed_NeighborlyPlugin", "SchedulingThroughput", 180),
		testItem("SchedulingMixed_NeighborlyPlugin", "neighborly_plugin_rpc_duration_seconds", 4.94, "method", "Filter"),
		testItem("SchedulingMixed_NeighborlyPlugin", "neighborly_plugin_ack_wait_seconds", 1.23, "extension_point", "PreFilter", "result", "acked"),
		testItem("SchedulingMixed_NeighborlyPlugin", "neighborly_plugin_ack_wait_seconds", 2.5, "extension_point", "Filter", "result", "acked"),
		testItem("SchedulingMixed_NeighborlyPlugin", "neighborly_plugin_ack_wait_seconds", 3.1, "extension_point", "Reserve", "result", "acked"),
		// Score waits for no ack: not a column.
		testItem("SchedulingMixed_NeighborlyPlugin", "neighborly_plugin_ack_wait_seconds", 9.9, "extension_point", "Score", "result", "acked"),
	}
	out := renderTables(runs, map[int][]dataItem{1: items})
	wantLines(t, out, "| SchedulingMixed | 5000Nodes | framework plugin | 1 | - | 180.0 | 180.0 | 180.0 | 180.0 | 90 % | - | - / - | 4.9 / - / -, waits 1.2 / 2.5 / - / 3.1 |")
}

// The first table's last column is the cycle's extension points, their mean
// times per pod and their sum, which sets kube-scheduler's pods/s; a run
// that measured none shows "-".
func TestRenderTablesSumsTheCyclesExtensionPoints(t *testing.T) {
	runs := []*workloadRun{
		{testCase: "SchedulingMixed_NeighborlyBaseline", family: "SchedulingMixed", workload: "5000Nodes", mode: modeBaseline, round: 1},
		{testCase: "SchedulingMixed_NeighborlyPlugin", family: "SchedulingMixed", workload: "5000Nodes", mode: modePlugin, round: 1},
	}
	point := func(tc, p string, ms float64) dataItem {
		return testItem(tc, "scheduler_framework_extension_point_duration_seconds", ms, "extension_point", p)
	}
	items := []dataItem{
		testItem("SchedulingMixed_NeighborlyBaseline", "SchedulingThroughput", 240),
		testItem("SchedulingMixed_NeighborlyPlugin", "SchedulingThroughput", 200),
		point("SchedulingMixed_NeighborlyPlugin", "PreFilter", 0.28),
		point("SchedulingMixed_NeighborlyPlugin", "Filter", 2.44),
		point("SchedulingMixed_NeighborlyPlugin", "PreScore", 0.05),
		point("SchedulingMixed_NeighborlyPlugin", "Score", 1.91),
		point("SchedulingMixed_NeighborlyPlugin", "Reserve", 0.02),
		point("SchedulingMixed_NeighborlyPlugin", "Bind", 20), // not the cycle's
	}
	out := renderTables(runs, map[int][]dataItem{1: items})
	wantLines(t, out,
		"| 0.28 / 2.44 / 1.91, 4.70 |",
		"| SchedulingMixed | 5000Nodes | fleet, not consulted | 1 | - | 240.0 |")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| SchedulingMixed | 5000Nodes | fleet, not consulted | 1 | - | 240.0 |") && !strings.HasSuffix(line, "| - |") {
			t.Errorf("a run without extension point times: %q, want \"-\" in the last column", line)
		}
	}
}

// testItem is a data item of test case tc at 5,000 nodes whose every
// statistic is avg, with labels given as name, value pairs.
func testItem(tc, metric string, avg float64, labels ...string) dataItem {
	l := map[string]string{"Metric": metric, "Name": "BenchmarkPerfScheduling/" + tc + "/5000Nodes/"}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return dataItem{Labels: l, Data: map[string]float64{"Average": avg, "Perc50": avg, "Perc90": avg, "Perc99": avg}}
}
