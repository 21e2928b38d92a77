package plugin

import (
	"context"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// signatureKey names the plugin's fragment of a pod's signature (KEP-5598's
// opportunistic batching): what Neighborly's model reads from the pod.
const signatureKey = "neighborly.io/v1.Pod.PlacementShape()"

var _ fwk.SignPlugin = (*Plugin)(nil)

// podShape is the part of a pod that Neighborly's verdict depends on: what
// podMessage sends to the extender but for the pod's UID and name (two
// replicas of a workload differ only there) and the containers' names. The
// class comes from the annotations, the label rules from the labels, the
// controller rule and the workload's profile from the owner and namespace,
// the footprint hints from the annotations, NUMA admission from the QoS and
// the containers' requests and limits.
type podShape struct {
	Namespace string `json:"namespace"`
	// Only for a pod without owner references: the extender takes its
	// workload key from its name and labels. A generated suffix
	// (generateName's five characters) is cut off, NameStem says so: bare
	// pods of one generateName share a shape, as the extender gives them
	// one workload key (extender/src/model/workload_key.h).
	Name           string            `json:"name,omitempty"`
	NameStem       bool              `json:"nameStem,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	QOSClass       string            `json:"qos,omitempty"`
	Owners         []ownerShape      `json:"owners,omitempty"`
	Containers     []containerShape  `json:"containers"`
	InitContainers []containerShape  `json:"initContainers,omitempty"`
}

type ownerShape struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Controller bool   `json:"controller,omitempty"`
}

type containerShape struct {
	CPURequestMillicores *int64 `json:"cpuRequest,omitempty"`
	CPULimitMillicores   *int64 `json:"cpuLimit,omitempty"`
	MemoryRequestBytes   *int64 `json:"memoryRequest,omitempty"`
	MemoryLimitBytes     *int64 `json:"memoryLimit,omitempty"`
}

// SignPod lets kube-scheduler batch consecutive pods of the same shape: two
// pods with the same fragment get the same answers from the extender for
// the same cluster state. The extender's state changes between two pods only
// on the node the first was reserved on (which batching does not reuse) and
// by telemetry, whose changes within a batch's 500 ms the batch does not see.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: signatureKey, Value: shapeOf(podMessage(pod))}}, nil
}

// shapeOf is the pod's shape: SignPod's fragment, and the key of its verdict
// table (verdicts.go).
func shapeOf(m *placementv1.Pod) podShape {
	shape := podShape{
		Namespace:   m.Namespace,
		Labels:      m.Labels,
		Annotations: m.Annotations,
		QOSClass:    m.QosClass,
	}
	for _, o := range m.OwnerReferences {
		shape.Owners = append(shape.Owners, ownerShape{Kind: o.Kind, Name: o.Name, Controller: o.Controller})
	}
	if len(shape.Owners) == 0 {
		shape.Name, shape.NameStem = nameStem(m.Name, m.Labels)
	}
	// The order of owner references carries no meaning; containers' order
	// does (init containers run in order, NUMA admission follows it).
	sort.Slice(shape.Owners, func(i, j int) bool {
		a, b := shape.Owners[i], shape.Owners[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	for _, c := range m.Containers {
		shape.Containers = append(shape.Containers, containerShape{c.CpuRequestMillicores, c.CpuLimitMillicores, c.MemoryRequestBytes, c.MemoryLimitBytes})
	}
	for _, c := range m.InitContainers {
		shape.InitContainers = append(shape.InitContainers, containerShape{c.CpuRequestMillicores, c.CpuLimitMillicores, c.MemoryRequestBytes, c.MemoryLimitBytes})
	}
	return shape
}

// generatedAlphabet is the alphabet of the API server's generated name
// suffixes (k8s.io/apiserver's names.SimpleNameGenerator, via
// utilrand.String).
const generatedAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// nameStem is a bare pod's name as the extender's workload key reads it: the
// name without a generated five-character suffix ("pod-x2k4q" -> "pod",
// true), or the whole name where there is none or where the suffix can
// matter to the key (a controller-revision-hash label: the StatefulSet rule
// reads an all-digit suffix as an ordinal). Every other rule of the
// extender's WorkloadKeyFromLabels reads only what comes before the suffix
// or the labels, so two pods with the same stem and labels get the same key.
func nameStem(name string, labels map[string]string) (string, bool) {
	if _, ok := labels["controller-revision-hash"]; ok {
		return name, false
	}
	dash := strings.LastIndexByte(name, '-')
	if dash <= 0 || len(name)-dash-1 != 5 {
		return name, false
	}
	for _, c := range name[dash+1:] {
		if !strings.ContainsRune(generatedAlphabet, c) {
			return name, false
		}
	}
	return name[:dash], true
}
