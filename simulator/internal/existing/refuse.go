package existing

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// Refusals are the reasons a scenario field cannot work against an existing cluster: what the
// envtest run does in the simulator's process (the registry's faults, the embedded scheduler,
// the components' processes) has no equivalent in a cluster the simulator only talks to.
const (
	whyRegistryFaults = "faults are injected into the simulator's in-process registry; the cluster's registry serves the catalog as it is"
	whyRegistryTLS    = "the cluster's pods reach the catalog through the cluster's registry, which serves TLS"
	whyRegistryAuth   = "the pull secrets need a user of the cluster's registry: pass --registry-auth USER:PASSWORD"
	whyDirect         = "mode direct starts the webhook and the controller in the simulator; against a cluster archgate runs as the pods deploy/ installs"
	whyNamespace      = "deploy/ installs archgate into " + DeployNamespace
	whyFailOpen       = "the operator's command line is deploy/'s; a run configures archgate only through the ClusterPodPlacementConfig"
	whyScheduler      = "tunes the simulator's embedded kube-scheduler; the cluster's own scheduler schedules"
	whyBackground     = "loads the simulator's machine, not the cluster's"
	whyExecFormat     = "the simulator would write pod statuses as the kubelet; the cluster's kwok owns the fake nodes' pods"
	whyTimeline       = "timeline events act on the simulator's in-process registry and component processes (or on the operator it runs); not offered against a cluster"
)

// Offer is what the run was given besides the scenario.
type Offer struct {
	// RegistryCredentials is true when the cluster's registry has a user the run can put in
	// pull secrets (simulator run --registry-auth).
	RegistryCredentials bool
}

// Unsupported returns, as field errors naming the scenario file, field and value, every field
// of s that a run against an existing cluster cannot honour with what it was offered; nil when
// there is none. A refusal up front is better than a run that silently measures something else.
func Unsupported(file string, s *scenario.Scenario, offer Offer) error {
	var errs []*strictyaml.FieldError
	add := func(path string, value any, reason string) {
		v, _ := json.Marshal(value)
		errs = append(errs, &strictyaml.FieldError{File: file, Path: path, Value: string(v), Reason: "not supported against an existing cluster: " + reason})
	}
	r := s.Registry
	for _, kind := range slices.Sorted(maps.Keys(r.Latency)) {
		add(fmt.Sprintf("registry.latency[%q]", kind), r.Latency[kind], whyRegistryFaults)
	}
	if r.Errors != nil {
		add("registry.errors", r.Errors, whyRegistryFaults)
	}
	if r.Auth != nil && !offer.RegistryCredentials {
		add("registry.auth.mode", r.Auth.Mode, whyRegistryAuth)
	}
	if r.TLS != nil && !*r.TLS {
		add("registry.tls", false, whyRegistryTLS)
	}
	o := s.Operator
	if o.Mode == scenario.OperatorModeDirect {
		add("operator.mode", o.Mode, whyDirect)
	}
	if o.Namespace != "" && o.Namespace != DeployNamespace {
		add("operator.namespace", o.Namespace, whyNamespace)
	}
	if o.FailOpenGracePeriod.D() != 0 {
		add("operator.failOpenGracePeriod", o.FailOpenGracePeriod.D().String(), whyFailOpen)
	}
	if s.Scheduler.PercentageOfNodesToScore != 0 {
		add("scheduler.percentageOfNodesToScore", s.Scheduler.PercentageOfNodesToScore, whyScheduler)
	}
	if s.Scheduler.DisableEvents {
		add("scheduler.disableEvents", true, whyScheduler)
	}
	if s.Background != nil {
		add("background.cpuShare", s.Background.CPUShare, whyBackground)
	}
	if s.Kubelet.ExecFormatErrors {
		add("kubelet.execFormatErrors", true, whyExecFormat)
	}
	for i, ev := range s.Timeline {
		name := eventName(ev)
		add(fmt.Sprintf("timeline[%d].%s", i, name), ev.At.D().String(), whyTimeline)
	}
	if len(errs) == 0 {
		return nil
	}
	return strictyaml.Join(file, errs)
}

// eventName is the action field an event sets (the scenario's validation allows exactly one).
func eventName(ev scenario.Event) string {
	for _, a := range []struct {
		name string
		set  bool
	}{
		{"registryOutage", ev.RegistryOutage != nil}, {"registrySlowdown", ev.RegistrySlowdown != nil},
		{"registryErrors", ev.RegistryErrors != nil}, {"controllerRestart", ev.ControllerRestart != nil},
		{"webhookDown", ev.WebhookDown != nil}, {"controllerDown", ev.ControllerDown != nil},
		{"clusterConfigDeleted", ev.ClusterConfigDeleted != nil}, {"clusterConfigChanged", ev.ClusterConfigChanged != nil},
	} {
		if a.set {
			return a.name
		}
	}
	return "at"
}
