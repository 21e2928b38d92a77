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

// Bare pods of one generateName (scheduler_perf's, a script's) share a
// shape: the extender gives them one workload key. A name without a
// generated suffix, or a StatefulSet's labels, keep the whole name.
func TestSignPodBarePodsOfOneGenerateNameSignAlike(t *testing.T) {
	p := &Plugin{}
	bare := func(uid, name string, labels map[string]string) *v1.Pod {
		pod := replica(uid, name)
		pod.OwnerReferences = nil
		pod.Labels = labels
		return pod
	}
	a := signature(t, p, bare("u1", "pod-x2k4q", nil))
	if got := signature(t, p, bare("u2", "pod-b7dzm", nil)); got != a {
		t.Errorf("two pods of generateName pod- sign differently:\n%s\n%s", a, got)
	}
	for name, pod := range map[string]*v1.Pod{
		"another generateName":     bare("u3", "job-x2k4q", nil),
		"no generated suffix":      bare("u4", "pod", nil),
		"a suffix outside the set": bare("u5", "pod-x2k4a", nil),
		"a suffix of six":          bare("u6", "pod-x2k4qq", nil),
		"an owner":                 replica("u7", "pod-x2k4q"),
	} {
		if got := signature(t, p, pod); got == a {
			t.Errorf("%s: signs like pod-x2k4q:\n%s", name, got)
		}
	}
	// The StatefulSet rule reads an all-digit suffix ("db-24567": ordinal
	// 24567): with its labels the name is kept whole.
	sts := map[string]string{"controller-revision-hash": "db-5d8f", "statefulset.kubernetes.io/pod-name": "x"}
	if signature(t, p, bare("u8", "db-24567", sts)) == signature(t, p, bare("u9", "db-bcdfg", sts)) {
		t.Errorf("pods with StatefulSet labels sign alike across their suffixes")
	}
	for _, c := range []struct {
		name, stem string
		cut        bool
	}{{"pod-x2k4q", "pod", true}, {"a-b-22222", "a-b", true}, {"-x2k4q", "-x2k4q", false}, {"web", "web", false}} {
		if stem, cut := nameStem(c.name, nil); stem != c.stem || cut != c.cut {
			t.Errorf("nameStem(%q) = %q, %v; want %q, %v", c.name, stem, cut, c.stem, c.cut)
		}
	}
}
