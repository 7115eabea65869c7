package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
)

// managedBy marks the EndpointSlices the kubelet writes, as the
// EndpointSlice controller marks its own.
const managedBy = "archgate-simulator"

// serviceLister lists the namespace's Services.
type serviceLister interface {
	Lister() listersv1.ServiceLister
}

// syncEndpointSlices writes one EndpointSlice per ready replica behind each
// Service that selects it (one each, since every replica has its own host
// ports), and deletes the slices of replicas that are gone or terminating.
func (k *Kubelet) syncEndpointSlices(ctx context.Context, services serviceLister) error {
	svcs, err := services.Lister().Services(k.opts.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	want := map[string]*discoveryv1ac.EndpointSliceApplyConfiguration{}
	k.mu.Lock()
	for _, svc := range svcs {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		for _, pods := range k.pods {
			for _, p := range pods {
				if !p.terminating && sel.Matches(labels.Set(p.labels)) {
					want[svc.Name+"-"+p.name] = k.endpointSlice(svc, p)
				}
			}
		}
	}
	key := sliceKey(want)
	unchanged := k.slicesValid && key == k.slices
	k.mu.Unlock()
	if unchanged {
		return nil
	}
	var errs []error
	for name, ac := range want {
		if _, err := k.opts.Client.DiscoveryV1().EndpointSlices(k.opts.Namespace).Apply(ctx, ac,
			metav1.ApplyOptions{FieldManager: managedBy, Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("EndpointSlice %s: %w", name, err))
		}
	}
	errs = append(errs, k.deleteStaleSlices(ctx, want))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	k.mu.Lock()
	k.slices, k.slicesValid = key, true
	k.mu.Unlock()
	return nil
}

// endpointSlice is the slice of one replica behind svc. k.mu is held.
func (k *Kubelet) endpointSlice(svc *corev1.Service, p *pod) *discoveryv1ac.EndpointSliceApplyConfiguration {
	ac := discoveryv1ac.EndpointSlice(svc.Name+"-"+p.name, k.opts.Namespace).
		WithLabels(map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: managedBy}).
		WithAddressType(discoveryv1.AddressTypeIPv4).
		WithEndpoints(discoveryv1ac.Endpoint().WithAddresses(k.opts.HostIP).
			WithConditions(discoveryv1ac.EndpointConditions().WithReady(true).WithServing(true).WithTerminating(false)).
			WithTargetRef(corev1TargetRef(k.opts.Namespace, p.name)))
	for _, sp := range svc.Spec.Ports {
		hp, ok := targetHostPort(sp, p)
		if !ok {
			continue
		}
		ac.WithPorts(discoveryv1ac.EndpointPort().WithName(sp.Name).WithPort(int32(hp)).WithProtocol(sp.Protocol))
	}
	return ac
}

// targetHostPort is the host port of the replica behind a Service port's
// targetPort (a container port name or number).
func targetHostPort(sp corev1.ServicePort, p *pod) (int, bool) {
	if sp.TargetPort.Type == intstr.String {
		hp, ok := p.spec.HostPorts[sp.TargetPort.StrVal]
		return hp, ok
	}
	hp, ok := p.ports[sp.TargetPort.IntVal]
	return hp, ok
}

// corev1TargetRef points an endpoint at its (simulated) pod.
func corev1TargetRef(namespace, name string) *corev1ac.ObjectReferenceApplyConfiguration {
	return corev1ac.ObjectReference().WithKind("Pod").WithNamespace(namespace).WithName(name)
}

func (k *Kubelet) deleteStaleSlices(ctx context.Context, want map[string]*discoveryv1ac.EndpointSliceApplyConfiguration) error {
	list, err := k.opts.Client.DiscoveryV1().EndpointSlices(k.opts.Namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelManagedBy + "=" + managedBy})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range list.Items {
		if _, ok := want[s.Name]; ok {
			continue
		}
		if err := k.opts.Client.DiscoveryV1().EndpointSlices(k.opts.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sliceKey(want map[string]*discoveryv1ac.EndpointSliceApplyConfiguration) string {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
