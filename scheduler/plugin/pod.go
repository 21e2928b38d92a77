package plugin

import (
	v1 "k8s.io/api/core/v1"

	placementv1 "neighborly.dev/scheduler/gen/placementv1"
)

// podMessage carries what the extender's model reads from a pod: the same
// fields its HTTP path decodes from the pod's JSON, so both paths build the
// same pod. Quantities are converted here (CPU in millicores, memory in bytes);
// an unset request or limit stays absent.
func podMessage(p *v1.Pod) *placementv1.Pod {
	m := &placementv1.Pod{
		Uid:         string(p.UID),
		Namespace:   p.Namespace,
		Name:        p.Name,
		Labels:      p.Labels,
		Annotations: p.Annotations,
		QosClass:    string(p.Status.QOSClass),
	}
	for _, o := range p.OwnerReferences {
		m.OwnerReferences = append(m.OwnerReferences, &placementv1.OwnerReference{
			Kind: o.Kind, Name: o.Name, Controller: o.Controller != nil && *o.Controller,
		})
	}
	m.Containers = containerMessages(p.Spec.Containers)
	m.InitContainers = containerMessages(p.Spec.InitContainers)
	return m
}

func containerMessages(cs []v1.Container) []*placementv1.Container {
	out := make([]*placementv1.Container, 0, len(cs))
	for i := range cs {
		c := &cs[i]
		m := &placementv1.Container{Name: c.Name}
		if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
			v := q.MilliValue()
			m.CpuRequestMillicores = &v
		}
		if q, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
			v := q.MilliValue()
			m.CpuLimitMillicores = &v
		}
		if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
			v := q.Value()
			m.MemoryRequestBytes = &v
		}
		if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
			v := q.Value()
			m.MemoryLimitBytes = &v
		}
		out = append(out, m)
	}
	return out
}
