package existing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/archgate/archgate/simulator/internal/report"
)

// Description is what the report's cluster block is built from.
type Description struct {
	// Server and ServerVersion name the cluster.
	Server, ServerVersion string
	// RunID is the run's id; Nodes every node of the cluster at the run's start (its own
	// created).
	RunID string
	Nodes []corev1.Node
	// Operator is true when archgate ran (scenario operator.enabled); Installed when the run
	// installed it from deploy/ (false: it found it installed and left it); Image is the
	// operator's image.
	Operator, Installed bool
	Image               string
	// Registry is the registry the pods' images were pulled from (host[:port]).
	Registry string
	// RegistryAuth is the scenario's registry.auth mode, "" without one.
	RegistryAuth string
	// RegistryCounted is true when the registry's request counters were read (--registry-metrics).
	RegistryCounted bool
}

// Describe builds the report's cluster block: the node counts, and which parts of the run were
// the cluster's own, which the simulator's, and which figures a run against a cluster cannot
// take (the processes of the control plane and of the pods are not the simulator's to read).
func Describe(d Description) *report.Cluster {
	c := &report.Cluster{Server: d.Server, ServerVersion: d.ServerVersion, RunID: d.RunID}
	for i := range d.Nodes {
		n := &d.Nodes[i]
		switch {
		case n.Labels[RunLabel] == d.RunID:
			c.FakeNodes++
		case IsKwok(n):
			c.OtherFakeNodes++
		default:
			c.RealNodes++
		}
	}
	c.Real = []string{"kube-apiserver and etcd", "kube-scheduler (the cluster's own; no embedded scheduler)",
		"kube-controller-manager (namespace deletion, node lifecycle)"}
	if d.Operator {
		how := "found installed, left in place"
		if d.Installed {
			how = "installed from deploy/ by the run and removed at its end"
		}
		c.Real = append(c.Real, fmt.Sprintf("archgate: operator, webhook and controller pods (image %s, %s; configured only through the ClusterPodPlacementConfig), the webhook called through its Service", d.Image, how),
			fmt.Sprintf("registry %s (the cluster's; serves the scenario's catalog)", d.Registry))
	}
	c.Simulated = []string{
		fmt.Sprintf("the run's %d nodes: kwok nodes (Ready through kwok's node leases; bound pods Running through kwok's stages, nothing runs)", c.FakeNodes),
		"the workload: pods created by the simulator at the scenario's arrival pattern (confined to the run's nodes: a toleration of the kwok taint and a required " + RunLabel + " node-affinity term)",
	}
	if d.RegistryAuth != "" {
		c.Simulated = append(c.Simulated, fmt.Sprintf("registry.auth (%s): pull secrets carry a user of the cluster's registry; its access rules are the registry's own, not the scenario's mode and anonymous patterns", d.RegistryAuth))
	}
	c.NotAvailable = []string{
		"CPU and memory of kube-apiserver, etcd, kube-scheduler and archgate's pods (not the simulator's processes): cost per pod counts the simulator only",
		"scheduler internals (its SLI histogram and queue metrics): schedule latency is when the simulator's watch saw the pod bound, on the simulator's clock",
	}
	if d.RegistryCounted {
		c.Real = append(c.Real, "the registry's request counters (read from its /metrics before and after the main pass)")
		c.NotAvailable = append(c.NotAvailable, "archgate's counters (cache hits, inspections)")
	} else {
		c.NotAvailable = append(c.NotAvailable, "archgate's and the registry's counters (cache hits, inspections, registry requests)")
	}
	return c
}
