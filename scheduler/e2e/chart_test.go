package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChartInstallsIntoRealAPIServer runs `helm install` of the chart, in
// each mode, into the in-process kube-apiserver: every object the chart
// renders must pass the real API server's validation and admission (no kubelet
// runs, so nothing is started; the objects only have to be accepted).
func TestChartInstallsIntoRealAPIServer(t *testing.T) {
	p := getPaths(t)
	cp := startControlPlane(t)
	for _, mode := range []struct {
		release, namespace string
		sets               []string
		deployments        []string
	}{
		{"neighborly", "neighborly", nil, []string{"neighborly-extender", "neighborly-scheduler"}},
		{"neighborly-extender-only", "neighborly-extender-only", []string{"mode=extender-only"}, []string{"neighborly-extender-only-extender"}},
		// With the rebalancer (issue 26): its Deployment, account and RBAC.
		{"neighborly-plugin", "neighborly-plugin", []string{"scheduler.integration=plugin", "rebalancer.enabled=true"},
			[]string{"neighborly-plugin-extender", "neighborly-plugin-scheduler", "neighborly-plugin-rebalancer"}},
		// Node identity with the in-cluster JWKS sync: its Job, CronJob and RBAC
		// (a binding to the built-in issuer-discovery ClusterRole) must be accepted.
		{"neighborly-jwks", "neighborly-jwks", []string{"extender.identity.issuer=https://kubernetes.default.svc.cluster.local",
			"extender.identity.jwksSync.enabled=true"}, []string{"neighborly-jwks-extender", "neighborly-jwks-scheduler"}},
	} {
		t.Run(mode.release, func(t *testing.T) {
			args := []string{"install", mode.release, filepath.Join(p.root, "charts/neighborly"),
				"--kubeconfig", cp.kubeconfig, "--namespace", mode.namespace, "--create-namespace"}
			for _, s := range mode.sets {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(p.helm, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			deployments, err := cp.client.AppsV1().Deployments(mode.namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range deployments.Items {
				names = append(names, d.Name)
			}
			for _, want := range mode.deployments {
				found := false
				for _, n := range names {
					found = found || n == want
				}
				if !found {
					t.Errorf("after helm install (%v): Deployments %v, want %s among them", mode.sets, names, want)
				}
			}
			// The agent's DaemonSets: one for nodes with RDT, one (-nordt) for the rest.
			daemonSets, err := cp.client.AppsV1().DaemonSets(mode.namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(daemonSets.Items) != 2 {
				t.Errorf("after helm install (%v): %d DaemonSets (err %v), want the agent's two (RDT and -nordt)", mode.sets, len(daemonSets.Items), err)
			}
			if mode.release == "neighborly-jwks" {
				cronJobs, err := cp.client.BatchV1().CronJobs(mode.namespace).List(context.Background(), metav1.ListOptions{})
				jobs, err2 := cp.client.BatchV1().Jobs(mode.namespace).List(context.Background(), metav1.ListOptions{})
				if err != nil || err2 != nil || len(cronJobs.Items) != 1 || len(jobs.Items) != 1 {
					t.Errorf("JWKS sync: %d CronJobs (err %v), %d Jobs (err %v), want one each", len(cronJobs.Items), err, len(jobs.Items), err2)
				}
			}
			t.Logf("helm install %s (%v): accepted; Deployments %v", mode.release, mode.sets, names)
		})
	}
}
