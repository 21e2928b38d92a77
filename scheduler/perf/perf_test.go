// Package perf runs kube-scheduler's own throughput benchmark, scheduler_perf
// of the pinned k8s.io/kubernetes (test/integration/scheduler_perf), on its
// SchedulingBasic workload with and without Neighborly in the loop, and
// prints one table comparing the modes (docs/performance.md, "What it costs
// the real scheduler"). `make bench-scheduler` (scripts/bench-scheduler.sh)
// builds and runs it.
//
// scheduler_perf starts, per workload, a fresh etcd (the binary in PATH), an
// in-process kube-apiserver and an in-process kube-scheduler configured by
// the test case's schedulerConfigPath. The hooks here add Neighborly around
// it: before the scheduler starts, the real neighborly-extender (HTTPS with
// client certificates, as the chart deploys it) and the scheduler
// configuration rendered from the chart; once the Nodes exist, a simulated
// fleet (neighborly-agent --simulate) streaming telemetry for every one of
// them by its generated name.
package perf

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/component-base/logs/json/register"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	benchmark "k8s.io/kubernetes/test/integration/scheduler_perf"

	"neighborly.dev/scheduler/plugin"
)

// harness is set by TestMain when benchmarks run.
var harness *benchHarness

func TestMain(m *testing.M) {
	if err := benchmark.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // the unit tests of this package only
	}
	h, err := newHarness()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-scheduler: %v\n", err)
		os.Exit(2)
	}
	harness = h
	code := m.Run()
	if err := h.report(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench-scheduler: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// BenchmarkPerfScheduling runs performance-config.yaml
// NEIGHBORLY_BENCH_ROUNDS times, round by round (so that each round compares
// the modes under the same background load), each round with its test cases
// in an order of its own (roundConfig) and writing its own result file.
// Select workloads with -perf-scheduling-label-filter (default
// "performance": 500 and 5,000 nodes; "smoke": 5 nodes, seconds).
func BenchmarkPerfScheduling(b *testing.B) {
	if harness == nil {
		b.Skip("the harness was not set up")
	}
	for round := 1; round <= harness.rounds; round++ {
		config, order, err := harness.roundConfig(round)
		if err != nil {
			b.Fatal(err)
		}
		harness.orders[round] = order
		fmt.Printf("bench-scheduler: round %d runs %v\n", round, order)
		b.Run(fmt.Sprintf("round%d", round), func(b *testing.B) {
			benchmark.RunBenchmarkPerfScheduling(b, config, "neighborly", outOfTreeRegistry(),
				benchmark.WithPreRunFn(harness.preRun), benchmark.WithNodeUpdateFn(harness.nodesCreated))
		})
	}
}

// outOfTreeRegistry is what scheduler_perf's scheduler gets besides the
// in-tree plugins, as neighborly-scheduler registers it
// (app.WithPlugin(plugin.Name, plugin.New)); the plugin mode's profile
// enables it. Each instance is kept for closePlugins.
func outOfTreeRegistry() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		plugin.Name: func(ctx context.Context, args runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
			p, err := plugin.New(ctx, args, handle)
			if err == nil {
				livePluginsMu.Lock()
				livePlugins = append(livePlugins, p.(io.Closer))
				livePluginsMu.Unlock()
			}
			return p, err
		},
	}
}

var (
	livePluginsMu sync.Mutex
	livePlugins   []io.Closer
)

// closePlugins closes the plugins of the workload that ended.
func closePlugins() {
	livePluginsMu.Lock()
	defer livePluginsMu.Unlock()
	for _, p := range livePlugins {
		p.Close()
	}
	livePlugins = nil
}
