package e2e

import (
	"path/filepath"
	"testing"
	"time"

	etcdtest "k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// controlPlane is an embedded etcd plus the in-process kube-apiserver of the
// pinned k8s.io/kubernetes release, both on loopback. No controllers and no
// kubelets run: a pod is "scheduled" when its spec.nodeName is set, which is
// exactly what kube-scheduler's bind does.
type controlPlane struct {
	config     *rest.Config
	client     kubernetes.Interface
	kubeconfig string // for subprocesses (kube-scheduler)
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	start := time.Now()
	etcdConfig := etcdtest.NewTestConfig(t)
	etcdtest.RunEtcd(t, etcdConfig)
	storage := storagebackend.NewDefaultConfig("/neighborly-e2e/registry", nil)
	storage.Transport.ServerList = []string{etcdConfig.ListenClientUrls[0].String()}
	// The two admission plugins would taint every new Node not-ready (no node
	// controller runs to clear it) and require ServiceAccounts (no controller
	// creates them); scheduler_perf disables the same ones.
	server := apiservertesting.StartTestServerOrDie(t, apiservertesting.NewDefaultTestServerOptions(),
		[]string{"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority"}, storage)
	t.Cleanup(server.TearDownFn) // runs before etcd's cleanup (LIFO)
	t.Logf("etcd and kube-apiserver up at %s in %v", server.ClientConfig.Host, time.Since(start).Round(time.Millisecond))
	return &controlPlane{
		config:     server.ClientConfig,
		client:     kubernetes.NewForConfigOrDie(server.ClientConfig),
		kubeconfig: writeKubeconfig(t, server.ClientConfig),
	}
}

// writeKubeconfig turns the API server's loopback client config (bearer token,
// its own CA, TLS server name apiserver-loopback-client) into a kubeconfig.
func writeKubeconfig(t *testing.T, c *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.CAData,
		CertificateAuthority:     c.CAFile,
		TLSServerName:            c.ServerName,
	}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: c.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}
