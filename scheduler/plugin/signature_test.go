package plugin

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func signature(t *testing.T, p *Plugin, pod *v1.Pod) string {
	t.Helper()
	fragments, status := p.SignPod(context.Background(), pod)
	if !status.IsSuccess() {
		t.Fatalf("SignPod: %v", status)
	}
	if len(fragments) != 1 || fragments[0].Key != signatureKey {
		t.Fatalf("fragments %+v, want one %q", fragments, signatureKey)
	}
	data, err := json.Marshal(fragments[0].Value)
	if err != nil {
		t.Fatalf("the fragment does not marshal: %v", err)
	}
	return string(data)
}

func replica(uid, name string) *v1.Pod {
	yes := true
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(uid), Name: name, Namespace: "apps",
			Labels:          map[string]string{"app": "web", "workload-type": "batch"},
			Annotations:     map[string]string{"neighborly.io/class": "batch", "neighborly.io/llc-bytes": "4Mi"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", Controller: &yes}},
		},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: name + "-main", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
		Status: v1.PodStatus{QOSClass: v1.PodQOSGuaranteed},
	}
}

// Replicas differ only in UID and names and sign alike; anything the
// extender's model reads from the pod changes the signature.
func TestSignPodCoversWhatTheVerdictReads(t *testing.T) {
	p := &Plugin{}
	base := signature(t, p, replica("u1", "web-1-a"))
	if got := signature(t, p, replica("u2", "web-1-b")); got != base {
		t.Errorf("two replicas sign differently:\n%s\n%s", base, got)
	}
	for name, change := range map[string]func(*v1.Pod){
		"class annotation":  func(p *v1.Pod) { p.Annotations["neighborly.io/class"] = "latency-critical" },
		"footprint hint":    func(p *v1.Pod) { p.Annotations["neighborly.io/llc-bytes"] = "8Mi" },
		"label rule":        func(p *v1.Pod) { delete(p.Labels, "workload-type") },
		"namespace":         func(p *v1.Pod) { p.Namespace = "other" },
		"owner":             func(p *v1.Pod) { p.OwnerReferences[0].Kind = "Job" },
		"QoS":               func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBurstable },
		"cpu request":       func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("2") },
		"memory limit":      func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("2Gi") },
		"an init container": func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "init"}} },
		"a second container": func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "sidecar"})
		},
	} {
		pod := replica("u3", "web-1-c")
		change(pod)
		if got := signature(t, p, pod); got == base {
			t.Errorf("%s: the signature did not change:\n%s", name, got)
		}
	}
}
