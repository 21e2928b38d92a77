// Command neighborly-scheduler is kube-scheduler of the release pinned in
// scheduler/go.mod with Neighborly's out-of-tree framework plugin registered
// (enable it in a profile as "Neighborly"; see docs/operations.md).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"neighborly.dev/scheduler/plugin"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))))
}
