package fakenodes

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PoolLabel marks every node with the name of the pool it belongs to.
const PoolLabel = "sim.archgate.io/pool"

// ArchLabel is the well-known node label the scheduler filters on.
const ArchLabel = corev1.LabelArchStable

// NodePool is a group of identical nodes of one architecture.
type NodePool struct {
	// Name prefixes node names (<name>-<index>) and is the PoolLabel value.
	Name string
	// Arch is the kubernetes.io/arch label: amd64, arm64, ppc64le, s390x.
	Arch string
	// OS is the kubernetes.io/os label; empty means linux.
	OS string
	// Count is the number of nodes.
	Count int
	// CPU, Memory and Pods are each node's capacity and allocatable.
	CPU    resource.Quantity
	Memory resource.Quantity
	Pods   int64
	// Taints are put on every node.
	Taints []corev1.Taint
}

// DefaultPool returns a pool of count nodes with generous capacity
// (32 CPUs, 128Gi, 110 pods), so that scheduling is never capacity-bound
// unless a scenario asks for it.
func DefaultPool(name, arch string, count int) NodePool {
	return NodePool{
		Name:   name,
		Arch:   arch,
		Count:  count,
		CPU:    resource.MustParse("32"),
		Memory: resource.MustParse("128Gi"),
		Pods:   110,
	}
}

// os is the pool's operating system, linux by default.
func (p NodePool) os() string {
	if p.OS == "" {
		return "linux"
	}
	return p.OS
}

// Node builds node index of the pool.
func (p NodePool) Node(index int) *corev1.Node {
	name := fmt.Sprintf("%s-%d", p.Name, index)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    p.CPU,
		corev1.ResourceMemory: p.Memory,
		corev1.ResourcePods:   *resource.NewQuantity(p.Pods, resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				ArchLabel:            p.Arch,
				corev1.LabelOSStable: p.os(),
				corev1.LabelHostname: name,
				PoolLabel:            p.Name,
			},
		},
		Spec: corev1.NodeSpec{Taints: slices.Clone(p.Taints)},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type:   corev1.NodeReady,
				Status: corev1.ConditionTrue,
				Reason: "KubeletReady",
			}},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    p.Arch,
				OperatingSystem: p.os(),
			},
		},
	}
}

// CreateNodes creates every node of the pools with at most concurrency
// requests in flight. The apiserver keeps a node's status on create, so one
// write per node suffices.
func CreateNodes(ctx context.Context, client kubernetes.Interface, pools []NodePool, concurrency int) error {
	var nodes []*corev1.Node
	for _, pool := range pools {
		for i := range pool.Count {
			nodes = append(nodes, pool.Node(i))
		}
	}
	return CreateNodeObjects(ctx, client, nodes, concurrency)
}

// CreateNodeObjects creates nodes with at most concurrency requests in flight.
func CreateNodeObjects(ctx context.Context, client kubernetes.Interface, nodes []*corev1.Node, concurrency int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for _, node := range nodes {
		g.Go(func() error {
			if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating node %s of pool %s: %w", node.Name, node.Labels[PoolLabel], err)
			}
			return nil
		})
	}
	return g.Wait()
}
