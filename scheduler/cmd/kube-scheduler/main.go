// Command kube-scheduler is the stock kube-scheduler, built from the same
// pinned k8s.io/kubernetes modules as neighborly-scheduler (no out-of-tree
// plugins). The e2e test runs it with the extender configuration the chart
// renders.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
