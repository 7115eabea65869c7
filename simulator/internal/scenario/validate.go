package scenario

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archgate/archgate/fakeregistry"
	"github.com/archgate/archgate/operator/api/v1beta1"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// Defaults applied to fields left unset.
const (
	DefaultDeadline          = 10 * time.Minute
	DefaultOperatorNamespace = "archgate-system"
	DefaultConcurrency       = 32
	DefaultZipfS             = 1.1
	// MaxContainers bounds containers and initContainers per pod.
	MaxContainers = 20
	// MaxAttackContainers bounds an attack pod's containers: 500 fit well
	// within the apiserver's request size.
	MaxAttackContainers = 1000
	// MaxAttackAnnotationBytes leaves room under the apiserver's 256 KiB
	// limit on a pod's annotations for the ones archgate adds.
	MaxAttackAnnotationBytes = 256<<10 - 4<<10
	// DefaultTarpitSize and DefaultTarpitBytesPerSecond shape the tarpit.
	DefaultTarpitSize           = "4Mi"
	DefaultTarpitBytesPerSecond = "256Ki"
)

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validate checks the decoded scenario and applies defaults to unset fields.
// It returns every problem found, not only the first.
func validate(s *Scenario) []*strictyaml.FieldError {
	var e errs
	if s.Name == "" {
		e.add("name", nil, "required")
	} else if !dnsLabelRE.MatchString(s.Name) || len(s.Name) > 63 {
		e.add("name", s.Name, "want lower-case letters, digits and '-' (it names the report directory)")
	}
	if s.Deadline == 0 {
		s.Deadline = Duration(DefaultDeadline)
	} else if s.Deadline.D() < time.Second {
		e.add("deadline", s.Deadline, "must be at least 1s")
	}
	if p := s.Scheduler.PercentageOfNodesToScore; p < 0 || p > 100 {
		e.add("scheduler.percentageOfNodesToScore", p, "must be within [0, 100] (0 keeps the scheduler's adaptive default)")
	}
	if h := s.Headroom; h != nil {
		if h.MaxUtilization < 0 || h.MaxUtilization > 1 {
			e.add("headroom.maxUtilization", h.MaxUtilization, "must be within (0, 1]: a share of the machine's CPU, all cores")
		}
		if h.MaxSpeedChange < 0 || h.MaxSpeedChange >= 1 {
			e.add("headroom.maxSpeedChange", h.MaxSpeedChange, "must be within (0, 1): a relative difference of calibration between passes")
		}
		if h.MaxHarnessChange < 0 || h.MaxHarnessChange >= 1 {
			e.add("headroom.maxHarnessChange", h.MaxHarnessChange, "must be within (0, 1): a relative difference of the harness's CPU per pod between passes")
		}
		if h.MaxUtilization == 0 && h.MaxSpeedChange == 0 && h.MaxHarnessChange == 0 {
			e.add("headroom", *h, "sets none of maxUtilization, maxSpeedChange and maxHarnessChange")
		}
	}
	if b := s.Background; b != nil && (b.CPUShare <= 0 || b.CPUShare > 1) {
		e.add("background.cpuShare", b.CPUShare, "must be within (0, 1]: a share of one core")
	}
	if s.HandwrittenViaWebhook && !s.HandwrittenBaseline {
		e.add("handwrittenViaWebhook", true, "needs handwrittenBaseline: true (it changes how that pass adds the affinity)")
	}
	if s.ControlPlane.ClusterDefaults && !s.ControlPlane.ControllerManager {
		e.add("controlPlane.clusterDefaults", true, "needs controlPlane.controllerManager: true (its serviceaccount controller creates the ServiceAccounts that admission then requires)")
	}
	switch {
	case s.HandwrittenViaPolicy && !s.HandwrittenBaseline:
		e.add("handwrittenViaPolicy", true, "needs handwrittenBaseline: true (it changes how that pass adds the affinity)")
	case s.HandwrittenViaPolicy && s.HandwrittenViaWebhook:
		e.add("handwrittenViaPolicy", true, "excludes handwrittenViaWebhook: the handwritten pass has one floor")
	}
	switch {
	case s.FloorBaseline != FloorNone && !slices.Contains(Floors(), s.FloorBaseline):
		e.add("floorBaseline", s.FloorBaseline, "must be one of %q", Floors())
	case s.FloorBaseline != FloorNone && s.HandwrittenFloor() != FloorNone:
		e.add("floorBaseline", s.FloorBaseline, "excludes handwrittenViaWebhook and handwrittenViaPolicy: the floor runs as its own pass beside the handwritten one")
	case s.FloorGate && s.FloorBaseline == FloorNone:
		e.add("floorGate", true, "needs floorBaseline (one of %q): it gates in the floor pass", Floors())
	}
	validateNodes(&e, s)
	validateRegistry(&e, s)
	validateOperator(&e, s)
	validateWorkload(&e, s)
	validateAttacker(&e, s)
	validateTimeline(&e, s)
	return e
}

func validateNodes(e *errs, s *Scenario) {
	if len(s.Nodes) == 0 {
		e.add("nodes", nil, "at least one node pool is required")
	}
	names := map[string]int{}
	for i := range s.Nodes {
		p := &s.Nodes[i]
		path := strictyaml.IndexPath("nodes", i)
		if !slices.Contains(v1beta1.SupportedArchitectures(), p.Arch) {
			e.add(strictyaml.JoinPath(path, "arch"), p.Arch, "want one of %s", strings.Join(v1beta1.SupportedArchitectures(), ", "))
		}
		if p.OS == "" {
			p.OS = "linux"
		} else if !slices.Contains(OperatingSystems, p.OS) {
			e.add(strictyaml.JoinPath(path, "os"), p.OS, "want one of %s", strings.Join(OperatingSystems, ", "))
		}
		if p.Count < 1 {
			e.add(strictyaml.JoinPath(path, "count"), p.Count, "must be at least 1")
		}
		if p.Name == "" {
			p.Name = p.Arch
		} else if !dnsLabelRE.MatchString(p.Name) || len(p.Name) > 40 {
			e.add(strictyaml.JoinPath(path, "name"), p.Name, "want a DNS label of at most 40 characters")
		}
		if j, dup := names[p.Name]; dup {
			e.add(strictyaml.JoinPath(path, "name"), p.Name, "duplicate pool name (also nodes[%d]; pools of one arch need names)", j)
		}
		names[p.Name] = i
		a := &p.Allocatable
		apath := strictyaml.JoinPath(path, "allocatable")
		positive(e, strictyaml.JoinPath(apath, "cpu"), &a.CPU, "32")
		positive(e, strictyaml.JoinPath(apath, "memory"), &a.Memory, "128Gi")
		if a.Pods == 0 {
			a.Pods = 110
		} else if a.Pods < 1 {
			e.add(strictyaml.JoinPath(apath, "pods"), a.Pods, "must be at least 1")
		}
		for j, t := range p.Taints {
			tpath := strictyaml.IndexPath(strictyaml.JoinPath(path, "taints"), j)
			if t.Key == "" {
				e.add(strictyaml.JoinPath(tpath, "key"), t.Key, "required")
			}
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				e.add(strictyaml.JoinPath(tpath, "effect"), t.Effect, "want NoSchedule, PreferNoSchedule or NoExecute")
			}
		}
	}
}

// positive defaults an unset quantity and rejects a non-positive one.
func positive(e *errs, path string, q **resource.Quantity, def string) {
	if *q == nil {
		v := resource.MustParse(def)
		*q = &v
		return
	}
	if (*q).Sign() <= 0 {
		e.add(path, (*q).String(), "must be greater than zero")
	}
}

func validateAttacker(e *errs, s *Scenario) {
	a := s.Attacker
	if a == nil {
		return
	}
	if !s.Operator.Enabled {
		e.add("attacker", nil, "needs operator.enabled: the attacker acts in the pass with the operator")
	}
	if a.Pods < 1 {
		e.add("attacker.pods", a.Pods, "must be at least 1")
	}
	if a.Rate <= 0 {
		e.add("attacker.rate", a.Rate, "must be greater than zero (pods per second)")
	}
	if len(a.Attacks) == 0 {
		e.add("attacker.attacks", nil, "at least one kind of attack pod is required")
	}
	kinds := []AttackImages{AttackImagesHang, AttackImagesTarpit, AttackImagesMissing, AttackImagesCatalog}
	tarpit := false
	for i := range a.Attacks {
		at := &a.Attacks[i]
		path := fmt.Sprintf("attacker.attacks[%d]", i)
		if at.Weight <= 0 {
			e.add(path+".weight", at.Weight, "must be greater than zero")
		}
		if !slices.Contains(kinds, at.Images) {
			e.add(path+".images", string(at.Images), "want one of hang, tarpit, missing, catalog")
		}
		tarpit = tarpit || at.Images == AttackImagesTarpit
		if at.Containers == 0 {
			at.Containers = 1
		} else if at.Containers < 1 || at.Containers > MaxAttackContainers {
			e.add(path+".containers", at.Containers, "must be within [1, %d]", MaxAttackContainers)
		}
		if at.AnnotationBytes < 0 || at.AnnotationBytes > MaxAttackAnnotationBytes {
			e.add(path+".annotationBytes", at.AnnotationBytes, "must be within [0, %d] (the apiserver refuses more than 256 KiB of annotations)", MaxAttackAnnotationBytes)
		}
	}
	switch {
	case tarpit && a.Tarpit == nil:
		a.Tarpit = &TarpitSpec{}
		fallthrough
	case tarpit:
		positive(e, "attacker.tarpit.size", &a.Tarpit.Size, DefaultTarpitSize)
		positive(e, "attacker.tarpit.bytesPerSecond", &a.Tarpit.BytesPerSecond, DefaultTarpitBytesPerSecond)
		if q := a.Tarpit.Size; q.Sign() > 0 && q.Value() < fakeregistry.MinTarpitSize {
			e.add("attacker.tarpit.size", a.Tarpit.Size.String(), "must be at least %d bytes", fakeregistry.MinTarpitSize)
		}
	case a.Tarpit != nil:
		e.add("attacker.tarpit", nil, "only applies with an attack of images: tarpit")
	}
}

func validateRegistry(e *errs, s *Scenario) {
	r := &s.Registry
	switch {
	case r.Catalog == nil && r.CatalogFile == "":
		e.add("registry", nil, "catalog or catalogFile is required (it is also the ground truth for misplaced pods)")
	case r.Catalog != nil && r.CatalogFile != "":
		e.add("registry.catalogFile", r.CatalogFile, "set catalog or catalogFile, not both")
	}
	if r.TLS == nil {
		t := true
		r.TLS = &t
	}
	kinds := requestKinds()
	for _, k := range sortedKeys(r.Latency) {
		path := strictyaml.JoinPath("registry.latency", k)
		if k != string(fakeregistry.AllKinds) && !slices.Contains(kinds, k) {
			e.add(path, k, "unknown request kind, want \"*\" or one of %s", strings.Join(kinds, ", "))
		}
		validateLatency(e, path, r.Latency[k])
	}
	if r.Errors != nil {
		validateRates(e, "registry.errors", *r.Errors)
	}
	if a := r.Auth; a != nil {
		if a.Mode != string(fakeregistry.AuthBasic) && a.Mode != string(fakeregistry.AuthBearer) {
			e.add("registry.auth.mode", a.Mode, "want basic or bearer (leave auth out for none)")
		}
		for i, p := range a.Anonymous {
			if strings.TrimSpace(p) == "" {
				e.add(strictyaml.IndexPath("registry.auth.anonymous", i), p, "empty repository pattern")
			}
		}
	}
}

func requestKinds() []string {
	var out []string
	for _, k := range fakeregistry.RequestKinds() {
		out = append(out, string(k))
	}
	return out
}

// validateLatency checks that exactly one distribution is given, with sane
// values.
func validateLatency(e *errs, path string, l LatencySpec) {
	forms := 0
	if l.Fixed != nil {
		forms++
		if *l.Fixed < 0 {
			e.add(strictyaml.JoinPath(path, "fixed"), *l.Fixed, "must not be negative")
		}
	}
	if l.Min != nil || l.Max != nil {
		forms++
		switch {
		case l.Min == nil || l.Max == nil:
			e.add(path, nil, "uniform latency needs both min and max")
		case *l.Min < 0 || *l.Max < *l.Min:
			e.add(strictyaml.JoinPath(path, "max"), *l.Max, "want 0 <= min <= max")
		}
	}
	if l.P50 != nil || l.P99 != nil {
		forms++
		switch {
		case l.P50 == nil || l.P99 == nil:
			e.add(path, nil, "log-normal latency needs both p50 and p99")
		case *l.P50 <= 0 || *l.P99 < *l.P50:
			e.add(strictyaml.JoinPath(path, "p99"), *l.P99, "want 0 < p50 <= p99")
		}
	}
	if forms != 1 {
		e.add(path, nil, "want exactly one of fixed, min+max (uniform) or p50+p99 (log-normal)")
	}
}

func validateRates(e *errs, path string, r ErrorRatesSpec) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"serverErrorRate", r.ServerErrorRate}, {"tooManyRequestsRate", r.TooManyRequestsRate}, {"hangRate", r.HangRate}} {
		if f.v < 0 || f.v > 1 {
			e.add(strictyaml.JoinPath(path, f.name), f.v, "must be within [0, 1]")
		}
	}
	if r.ServerErrorRate+r.TooManyRequestsRate+r.HangRate > 1 {
		e.add(path, nil, "the rates must sum to at most 1")
	}
	if r.RetryAfter < 0 {
		e.add(strictyaml.JoinPath(path, "retryAfter"), r.RetryAfter, "must not be negative")
	}
	kinds := requestKinds()
	for i, k := range r.Kinds {
		if !slices.Contains(kinds, k) {
			e.add(strictyaml.IndexPath(strictyaml.JoinPath(path, "kinds"), i), k, "unknown request kind, want one of %s", strings.Join(kinds, ", "))
		}
	}
}

// validateOperator checks and defaults the operator block, one check per field in the
// schema's order, so that a field's rule is found where the field is.
func validateOperator(e *errs, s *Scenario) {
	o := &s.Operator
	if o.Namespace == "" {
		o.Namespace = DefaultOperatorNamespace
	} else if !dnsLabelRE.MatchString(o.Namespace) {
		e.add("operator.namespace", o.Namespace, "want a DNS label")
	}
	validateMode(e, s)
	for _, f := range []struct {
		name string
		v    int
	}{{"workers", o.Workers}, {"inspectWorkers", o.InspectWorkers}, {"burst", o.Burst}} {
		if f.v < 0 {
			e.add(strictyaml.JoinPath("operator", f.name), f.v, "must not be negative (0 keeps the operator's default)")
		}
	}
	switch o.ControllerReplicas {
	case 0:
		o.ControllerReplicas = 1
	case 1, 2:
	default:
		e.add("operator.controllerReplicas", o.ControllerReplicas, "want 1 or 2 (2: a leader and a warm standby)")
	}
	if o.QPS < 0 {
		e.add("operator.qps", o.QPS, "must not be negative (0 keeps the operator's default)")
	}
	if o.RetryBaseDelay < 0 {
		e.add("operator.retryBaseDelay", o.RetryBaseDelay, "must not be negative")
	}
	if o.RetryMaxDelay != 0 && o.RetryMaxDelay < o.RetryBaseDelay {
		e.add("operator.retryMaxDelay", o.RetryMaxDelay, "must be at least retryBaseDelay")
	}
	if o.GlobalPullSecret && s.Registry.Auth == nil {
		e.add("operator.globalPullSecret", true, "needs registry.auth (without auth there is nothing to authenticate)")
	}
	validateClusterConfig(e, "operator.clusterConfig", &o.ClusterConfig)
	validatePodPlacementConfigs(e, o.PodPlacementConfigs, s.Workload.Namespaces)
}

// validateClusterConfig checks a ClusterPodPlacementConfig spec a scenario writes at path
// (operator.clusterConfig, or a timeline's clusterConfigChanged spec, which replaces it): the
// references the simulator sets itself are refused, and the blocked networks default to what
// the simulated registries allow, so that every spec the operator sees reaches them.
func validateClusterConfig(e *errs, path string, c *v1beta1.ClusterPodPlacementConfigSpec) {
	at := func(field string) string { return strictyaml.JoinPath(path, field) }
	if c.GlobalPullSecretRef != nil {
		e.add(at("globalPullSecretRef"), c.GlobalPullSecretRef, "set by the simulator: use operator.globalPullSecret")
	}
	if c.CABundleConfigmapRef != nil {
		e.add(at("caBundleConfigmapRef"), c.CABundleConfigmapRef, "set by the simulator: the registry's CA is passed as a certs.d directory")
	}
	if c.RegistriesConfConfigmapRef != nil {
		e.add(at("registriesConfConfigmapRef"), c.RegistriesConfConfigmapRef, "not supported by the simulator yet: the controller runs without a registries.conf")
	}
	if c.RegistryCertsConfigmapRef != nil {
		e.add(at("registryCertsConfigmapRef"), c.RegistryCertsConfigmapRef, "set by the simulator: the registry's CA is passed as a certs.d directory")
	}
	if c.LogVerbosity != "" && c.LogVerbosity.Level() == 0 && c.LogVerbosity != v1beta1.LogVerbosityNormal {
		e.add(at("logVerbosity"), c.LogVerbosity, "want Normal, Debug, Trace or TraceAll")
	}
	validatePlugins(e, at("plugins"), c.Plugins)
	if len(c.PlacementRules) > 0 {
		e.add(at("placementRules"), len(c.PlacementRules), "%s", placementRulesUnsupported)
	}
	if ii := c.ImageInspection; ii == nil || len(ii.BlockedNetworks) == 0 {
		// The simulated cluster's registries listen on loopback (a registry inside the
		// cluster's network, as far as the controller can tell): block link-local only, as an
		// admin whose registry runs on the pod network would.
		if c.ImageInspection == nil {
			c.ImageInspection = &v1beta1.ImageInspection{}
		}
		c.ImageInspection.BlockedNetworks = SimulatedBlockedNetworks()
	}
	// The API's own bounds (v1beta1.ImageInspectionSettings.Validate), on the resolved settings.
	for _, fe := range c.ImageInspection.Settings().Validate(field.NewPath(at("imageInspection"))) {
		e.add(fe.Field, fe.BadValue, "%s", fe.Detail)
	}
}

// validatePodPlacementConfigs checks the namespaced placement configurations.
func validatePodPlacementConfigs(e *errs, ppcs []PodPlacementConfigSpec, namespaces int) {
	names := map[string]bool{}
	for i, p := range ppcs {
		path := strictyaml.IndexPath("operator.podPlacementConfigs", i)
		if !dnsLabelRE.MatchString(p.Name) {
			e.add(strictyaml.JoinPath(path, "name"), p.Name, "want a DNS label")
		} else if names[p.Name] {
			e.add(strictyaml.JoinPath(path, "name"), p.Name, "duplicate name")
		}
		names[p.Name] = true
		if p.Namespaces < 0 || p.Namespaces > max(namespaces, 1) {
			e.add(strictyaml.JoinPath(path, "namespaces"), p.Namespaces, "must be within [0, workload.namespaces] (0 means all)")
		}
		if p.Spec.Priority < 0 || p.Spec.Priority > 255 {
			e.add(strictyaml.JoinPath(path, "spec.priority"), p.Spec.Priority, "must be within [0, 255]")
		}
		validatePlugins(e, strictyaml.JoinPath(path, "spec.plugins"), p.Spec.Plugins)
		if p.Spec.Plugins != nil && p.Spec.Plugins.ExecFormatErrorMonitor != nil {
			e.add(strictyaml.JoinPath(path, "spec.plugins.execFormatErrorMonitor"), p.Spec.Plugins.ExecFormatErrorMonitor,
				"cluster-wide only: set it in operator.clusterConfig.plugins")
		}
	}
}

func validatePlugins(e *errs, path string, p *v1beta1.Plugins) {
	if p == nil || p.NodeAffinityScoring == nil {
		return
	}
	n := p.NodeAffinityScoring
	path = strictyaml.JoinPath(path, "nodeAffinityScoring")
	if n.Enabled && len(n.Platforms) == 0 {
		e.add(strictyaml.JoinPath(path, "platforms"), nil, "must not be empty when enabled")
	}
	seen := map[string]bool{}
	for i, t := range n.Platforms {
		tp := strictyaml.IndexPath(strictyaml.JoinPath(path, "platforms"), i)
		if !slices.Contains(v1beta1.SupportedArchitectures(), t.Architecture) {
			e.add(strictyaml.JoinPath(tp, "architecture"), t.Architecture, "want one of %s", strings.Join(v1beta1.SupportedArchitectures(), ", "))
		} else if seen[t.Architecture] {
			e.add(strictyaml.JoinPath(tp, "architecture"), t.Architecture, "each architecture may appear once")
		}
		seen[t.Architecture] = true
		if t.Weight < 1 || t.Weight > 100 {
			e.add(strictyaml.JoinPath(tp, "weight"), t.Weight, "must be within [1, 100]")
		}
	}
}

// validateWorkload checks and defaults the workload block, one check per field in the
// schema's order, so that a field's rule is found where the field is.
func validateWorkload(e *errs, s *Scenario) {
	w := &s.Workload
	if w.Pods < 1 {
		e.add("workload.pods", w.Pods, "must be at least 1")
	}
	if w.Namespaces == 0 {
		w.Namespaces = 1
	} else if w.Namespaces < 1 || w.Namespaces > 1000 {
		e.add("workload.namespaces", w.Namespaces, "must be within [1, 1000]")
	}
	if w.Containers == nil {
		w.Containers = &IntRange{Min: 1, Max: 1}
	} else if w.Containers.Min < 1 || w.Containers.Max < w.Containers.Min || w.Containers.Max > MaxContainers {
		e.add("workload.containers", w.Containers, "want 1 <= min <= max <= %d", MaxContainers)
	}
	if w.InitContainers == nil {
		w.InitContainers = &IntRange{}
	} else if w.InitContainers.Min < 0 || w.InitContainers.Max < w.InitContainers.Min || w.InitContainers.Max > MaxContainers {
		e.add("workload.initContainers", w.InitContainers, "want 0 <= min <= max <= %d", MaxContainers)
	}
	validateImages(e, &w.Images)
	validateShares(e, s)
	positive(e, "workload.requests.cpu", &w.Requests.CPU, "10m")
	positive(e, "workload.requests.memory", &w.Requests.Memory, "16Mi")
	validateArrival(e, &w.Arrival)
}

// validateImages checks and defaults how pods pick their images.
func validateImages(e *errs, im *ImageChoiceSpec) {
	switch im.Popularity {
	case "":
		im.Popularity = PopularityUniform
	case PopularityUniform, PopularityUnique:
	case PopularityZipf:
		if im.ZipfS == 0 {
			im.ZipfS = DefaultZipfS
		}
	default:
		e.add("workload.images.popularity", im.Popularity, "want uniform, zipf or unique")
	}
	if im.ZipfS != 0 && im.Popularity != PopularityZipf {
		e.add("workload.images.zipfS", im.ZipfS, "only applies to popularity zipf")
	} else if im.Popularity == PopularityZipf && im.ZipfS <= 1 {
		e.add("workload.images.zipfS", im.ZipfS, "must be greater than 1")
	}
	share(e, "workload.images.digestShare", im.DigestShare)
}

// validateShares checks the shares of pods with their own constraints or pull secrets.
func validateShares(e *errs, s *Scenario) {
	w := &s.Workload
	share(e, "workload.ownArchAffinityShare", w.OwnArchAffinityShare)
	share(e, "workload.nodeSelectorShare", w.NodeSelectorShare)
	share(e, "workload.pullSecretShare", w.PullSecretShare)
	if w.OwnArchAffinityShare+w.NodeSelectorShare > 1 {
		e.add("workload.nodeSelectorShare", w.NodeSelectorShare, "ownArchAffinityShare + nodeSelectorShare must be at most 1")
	}
	if w.PullSecretShare > 0 && s.Registry.Auth == nil {
		e.add("workload.pullSecretShare", w.PullSecretShare, "needs registry.auth (without auth there is nothing to authenticate)")
	}
}

// validateArrival checks and defaults the arrival schedule.
func validateArrival(e *errs, a *ArrivalSpec) {
	switch a.Mode {
	case ArrivalBurst:
		if a.Rate != 0 {
			e.add("workload.arrival.rate", a.Rate, "only applies to mode rate")
		}
	case ArrivalRate:
		if a.Rate <= 0 {
			e.add("workload.arrival.rate", a.Rate, "must be greater than zero")
		}
	case ArrivalSteps:
		if a.Rate != 0 {
			e.add("workload.arrival.rate", a.Rate, "only applies to mode rate; give each step its rate")
		}
		if len(a.Steps) == 0 {
			e.add("workload.arrival.steps", nil, "at least one step is required")
		}
	case "":
		e.add("workload.arrival.mode", nil, "required: burst, rate or steps")
	default:
		e.add("workload.arrival.mode", a.Mode, "want burst, rate or steps")
	}
	if a.Mode != ArrivalSteps && len(a.Steps) > 0 {
		e.add("workload.arrival.steps", a.Steps, "only applies to mode steps")
	}
	switch {
	case a.Mode != ArrivalSteps && a.SustainLatency != nil:
		e.add("workload.arrival.sustainLatency", *a.SustainLatency, "only applies to mode steps")
	case a.Mode == ArrivalSteps && a.SustainLatency == nil:
		a.SustainLatency = ptrTo(Duration(DefaultSustainLatency))
	case a.SustainLatency != nil && *a.SustainLatency <= 0:
		e.add("workload.arrival.sustainLatency", *a.SustainLatency, "must be greater than zero")
	}
	for i, st := range a.Steps {
		p := strictyaml.IndexPath("workload.arrival.steps", i)
		if st.Rate <= 0 {
			e.add(strictyaml.JoinPath(p, "rate"), st.Rate, "must be greater than zero")
		}
		if st.Duration <= 0 {
			e.add(strictyaml.JoinPath(p, "duration"), st.Duration, "must be greater than zero")
		}
	}
	if a.Concurrency == 0 {
		a.Concurrency = DefaultConcurrency
	} else if a.Concurrency < 1 || a.Concurrency > 1000 {
		e.add("workload.arrival.concurrency", a.Concurrency, "must be within [1, 1000]")
	}
}

// DefaultSustainLatency is the total-latency p99 a step must keep by
// default: a second, well inside clusterloader2's 5 s pod-startup SLO, so a
// sustained rate leaves room for the kubelet's part of start-up.
const DefaultSustainLatency = time.Second

func ptrTo[T any](v T) *T { return &v }

func share(e *errs, path string, v float64) {
	if v < 0 || v > 1 {
		e.add(path, v, "must be within [0, 1]")
	}
}

// validateMode defaults operator.mode to operator and, in that mode, refuses
// the settings no cluster can give the components: they are not fields of
// the ClusterPodPlacementConfig, and the operator renders its own values.
func validateMode(e *errs, s *Scenario) {
	o := &s.Operator
	switch o.Mode {
	case "":
		o.Mode = OperatorModeOperator
	case OperatorModeOperator, OperatorModeDirect:
	default:
		e.add("operator.mode", o.Mode, "want operator or direct")
	}
	if o.Mode == OperatorModeDirect {
		if o.FailOpenGracePeriod != 0 {
			e.add("operator.failOpenGracePeriod", o.FailOpenGracePeriod, "needs operator.mode operator (it is the operator's flag)")
		}
		return
	}
	if o.FailOpenGracePeriod < 0 {
		e.add("operator.failOpenGracePeriod", o.FailOpenGracePeriod, "must not be negative")
	}
	const why = "not a setting a cluster can give the components (no ClusterPodPlacementConfig field): only with operator.mode direct"
	for _, f := range []struct {
		name string
		set  bool
		v    any
	}{
		{"workers", o.Workers != 0, o.Workers}, {"inspectWorkers", o.InspectWorkers != 0, o.InspectWorkers},
		{"qps", o.QPS != 0, o.QPS}, {"burst", o.Burst != 0, o.Burst},
		{"retryBaseDelay", o.RetryBaseDelay != 0, o.RetryBaseDelay}, {"retryMaxDelay", o.RetryMaxDelay != 0, o.RetryMaxDelay},
		{"controllerReplicas", o.ControllerReplicas != 0, o.ControllerReplicas},
	} {
		if f.set {
			e.add(strictyaml.JoinPath("operator", f.name), f.v, "%s", why)
		}
	}
	if s.Registry.TLS != nil && !*s.Registry.TLS && o.Enabled {
		e.add("registry.tls", false, "operator.mode operator gives the controller the registry's CA (registryCertsConfigmapRef): only with operator.mode direct")
	}
	if o.ClusterConfig.LocalPlacementEnabled() {
		e.add("operator.clusterConfig.localPlacement", o.ClusterConfig.LocalPlacement,
			"the simulator's kubelet runs the Deployments of the operator's namespace only, not the local components the operator renders in workload namespaces: only with operator.mode direct")
	}
}

// placementRulesUnsupported says why a scenario cannot configure placement rules: the
// handwritten pass writes archgate's placement without archgate (pkg/affinity), and does not
// evaluate CEL, so the two passes would place pods differently.
const placementRulesUnsupported = "not supported by the simulator yet: the handwritten pass does not evaluate placement rules"

// validateTimeline checks each timeline event: its time, that it has exactly one action, and
// the action's own rules (one case per action, so that an action's rules are found in one
// place).
func validateTimeline(e *errs, s *Scenario) {
	defer overlaps(e, s)
	for i, ev := range s.Timeline {
		path := strictyaml.IndexPath("timeline", i)
		if ev.At < 0 || ev.At.D() >= s.Deadline.D() {
			e.add(strictyaml.JoinPath(path, "at"), ev.At, "must be within [0, deadline)")
		}
		actions := ev.actions()
		if len(actions) != 1 {
			e.add(path, actions, "want exactly one action of %s", strings.Join(EventActions(), ", "))
			continue
		}
		if !s.Operator.Enabled {
			e.add(strictyaml.JoinPath(path, actions[0]), nil, "needs operator.enabled (without the operator nothing reacts to it)")
		}
		apath := strictyaml.JoinPath(path, actions[0])
		if !validateRegistryEvent(e, apath, ev) {
			validateComponentEvent(e, apath, ev, s.Operator.Mode)
		}
	}
}

// window checks the duration of an action that lasts a while.
func window(e *errs, apath string, d Duration) {
	if d <= 0 {
		e.add(strictyaml.JoinPath(apath, "duration"), d, "must be greater than zero")
	}
}

// validateRegistryEvent checks an action on the registry; false when ev is not one.
func validateRegistryEvent(e *errs, apath string, ev Event) bool {
	switch {
	case ev.RegistryOutage != nil:
		window(e, apath, ev.RegistryOutage.Duration)
		switch ev.RegistryOutage.Mode {
		case "":
			ev.RegistryOutage.Mode = string(fakeregistry.OutageUnavailable)
		case string(fakeregistry.OutageUnavailable), string(fakeregistry.OutageReset):
		default:
			e.add(strictyaml.JoinPath(apath, "mode"), ev.RegistryOutage.Mode, "want unavailable or reset")
		}
	case ev.RegistrySlowdown != nil:
		window(e, apath, ev.RegistrySlowdown.Duration)
		validateLatency(e, strictyaml.JoinPath(apath, "latency"), ev.RegistrySlowdown.Latency)
	case ev.RegistryErrors != nil:
		window(e, apath, ev.RegistryErrors.Duration)
		validateRates(e, strictyaml.JoinPath(apath, "rates"), ev.RegistryErrors.Rates)
	case ev.ImagesDeleted != nil:
		if ev.ImagesDeleted.Prefix == "" {
			e.add(strictyaml.JoinPath(apath, "prefix"), ev.ImagesDeleted.Prefix, "required: the repositories whose images are deleted")
		}
		if ev.ImagesDeleted.Count < 1 {
			e.add(strictyaml.JoinPath(apath, "count"), ev.ImagesDeleted.Count, "must be at least 1")
		}
	default:
		return false
	}
	return true
}

// validateComponentEvent checks an action on archgate's components or its configuration.
func validateComponentEvent(e *errs, apath string, ev Event, mode OperatorMode) {
	switch {
	case ev.ControllerRestart != nil:
		if ev.ControllerRestart.Downtime < 0 {
			e.add(strictyaml.JoinPath(apath, "downtime"), ev.ControllerRestart.Downtime, "must not be negative")
		}
		switch ev.ControllerRestart.Mode {
		case "":
			ev.ControllerRestart.Mode = RestartGraceful
		case RestartGraceful, RestartCrash:
		default:
			e.add(strictyaml.JoinPath(apath, "mode"), ev.ControllerRestart.Mode, "want graceful or crash")
		}
	case ev.WebhookDown != nil:
		window(e, apath, ev.WebhookDown.Duration)
	case ev.ControllerDown != nil:
		window(e, apath, ev.ControllerDown.Duration)
		if mode != OperatorModeOperator {
			e.add(apath, nil, "needs operator.mode operator (the operator's Deployment is what goes down)")
		}
	case ev.ClusterConfigChanged != nil:
		if mode != OperatorModeOperator {
			e.add(apath, nil, "needs operator.mode operator (the operator renders the change)")
		}
		validateClusterConfig(e, strictyaml.JoinPath(apath, "spec"), &ev.ClusterConfigChanged.Spec)
	case ev.ClusterConfigDeleted != nil:
		if ev.ClusterConfigDeleted.RecreateAfter < 0 {
			e.add(strictyaml.JoinPath(apath, "recreateAfter"), ev.ClusterConfigDeleted.RecreateAfter, "must not be negative")
		}
	}
}

// overlaps reports timeline windows of the same component that overlap:
// each window restores the component's configuration when it ends, so an
// overlapping one would be cut short.
func overlaps(e *errs, s *Scenario) {
	type window struct {
		i          int
		start, end time.Duration
	}
	byComponent := map[string][]window{}
	for i, ev := range s.Timeline {
		var comp string
		var d time.Duration
		switch {
		case ev.RegistryOutage != nil:
			comp, d = "registry", ev.RegistryOutage.Duration.D()
		case ev.RegistrySlowdown != nil:
			comp, d = "registry", ev.RegistrySlowdown.Duration.D()
		case ev.RegistryErrors != nil:
			comp, d = "registry", ev.RegistryErrors.Duration.D()
		case ev.ControllerRestart != nil:
			comp, d = "controller", ev.ControllerRestart.Downtime.D()
		case ev.ControllerDown != nil:
			comp, d = "controller", ev.ControllerDown.Duration.D()
		case ev.WebhookDown != nil:
			comp, d = "webhook", ev.WebhookDown.Duration.D()
		case ev.ClusterConfigDeleted != nil:
			comp, d = "clusterConfig", ev.ClusterConfigDeleted.RecreateAfter.D()
		case ev.ClusterConfigChanged != nil:
			comp = "clusterConfig"
		default:
			continue
		}
		w := window{i, ev.At.D(), ev.At.D() + d}
		for _, o := range byComponent[comp] {
			if w.start <= o.end && o.start <= w.end {
				e.add(strictyaml.JoinPath(strictyaml.IndexPath("timeline", i), "at"), ev.At, "overlaps timeline[%d] on the %s: windows of one component must not overlap", o.i, comp)
			}
		}
		byComponent[comp] = append(byComponent[comp], w)
	}
}

// EventActions lists the timeline actions by their field names.
func EventActions() []string {
	return []string{"registryOutage", "registrySlowdown", "registryErrors", "controllerRestart", "webhookDown", "clusterConfigDeleted", "controllerDown", "clusterConfigChanged", "imagesDeleted"}
}

// actions returns the field names of the actions set on ev.
func (ev *Event) actions() []string {
	var out []string
	set := []bool{ev.RegistryOutage != nil, ev.RegistrySlowdown != nil, ev.RegistryErrors != nil,
		ev.ControllerRestart != nil, ev.WebhookDown != nil, ev.ClusterConfigDeleted != nil, ev.ControllerDown != nil, ev.ClusterConfigChanged != nil,
		ev.ImagesDeleted != nil}
	for i, on := range set {
		if on {
			out = append(out, EventActions()[i])
		}
	}
	return out
}

// Action returns the name of the event's action.
func (ev *Event) Action() string {
	if a := ev.actions(); len(a) == 1 {
		return a[0]
	}
	return ""
}

// validateWithCatalog checks what needs the built catalog: that pods can find
// images to run on the node pools' architectures, and that unique popularity
// has enough images.
func validateWithCatalog(s *Scenario, c *fakeregistry.Catalog) []*strictyaml.FieldError {
	var e errs
	images := c.Images()
	if len(images) == 0 {
		e.add("registry.catalog", nil, "the catalog holds no image for the pods")
		return e
	}
	for i, ev := range s.Timeline {
		if d := ev.ImagesDeleted; d != nil {
			if n := len(ImagesWithPrefix(images, d.Prefix)); n < d.Count {
				e.add(strictyaml.JoinPath(strictyaml.JoinPath(strictyaml.IndexPath("timeline", i), "imagesDeleted"), "count"), d.Count,
					"the catalog holds %d images whose repository starts with %q", n, d.Prefix)
			}
		}
	}
	w := s.Workload
	if w.Images.Popularity == PopularityUnique {
		need := w.Pods * (w.Containers.Max + w.InitContainers.Max)
		if need > len(images) {
			e.add("workload.images.popularity", w.Images.Popularity,
				"unique needs pods × (containers.max + initContainers.max) = %d images, the catalog holds %d", need, len(images))
		}
	}
	if !w.Images.AllowIncompatible {
		platforms := NodePlatforms(s)
		runnable := slices.ContainsFunc(images, func(im fakeregistry.Image) bool {
			return im.Arches.NoBinaries || slices.ContainsFunc(platforms, func(p string) bool { return slices.Contains(ImagePlatforms(im), p) })
		})
		if !runnable {
			e.add("registry.catalog", nil, "no image runs on the node pools' platforms %v (set workload.images.allowIncompatible to create such pods anyway)", platforms)
		}
	}
	return e
}

// ImagesWithPrefix returns the images whose repository starts with prefix, in
// catalog order.
func ImagesWithPrefix(images []fakeregistry.Image, prefix string) []fakeregistry.Image {
	var out []fakeregistry.Image
	for _, im := range images {
		if strings.HasPrefix(im.Repository, prefix) {
			out = append(out, im)
		}
	}
	return out
}

// SimulatedBlockedNetworks are the networks the controller refuses in a scenario
// that names none (operator.clusterConfig.imageInspection.blockedNetworks): the link-local
// ones of the default, not loopback, where the simulator's registries listen.
func SimulatedBlockedNetworks() []string { return []string{"169.254.0.0/16", "fe80::/10"} }

// OperatingSystems are the values of a node pool's os.
var OperatingSystems = []string{"linux", "windows"}

// NodePlatforms returns the sorted "os/arch" platforms of the node pools.
func NodePlatforms(s *Scenario) []string {
	var out []string
	for _, p := range s.Nodes {
		if pl := cmp.Or(p.OS, "linux") + "/" + p.Arch; !slices.Contains(out, pl) {
			out = append(out, pl)
		}
	}
	slices.Sort(out)
	return out
}

// ImagePlatforms returns the sorted "os/arch" platforms an image runs on (variants dropped, as
// node labels carry none); none for an image without binaries, which runs anywhere.
func ImagePlatforms(im fakeregistry.Image) []string {
	var out []string
	if im.Arches.NoBinaries {
		return out
	}
	for _, p := range im.Platforms {
		if pl := p.OS + "/" + p.Architecture; !slices.Contains(out, pl) {
			out = append(out, pl)
		}
	}
	slices.Sort(out)
	return out
}

// NodeArchitectures returns the sorted architectures of the node pools.
func NodeArchitectures(s *Scenario) []string {
	var out []string
	for _, p := range s.Nodes {
		if !slices.Contains(out, p.Arch) {
			out = append(out, p.Arch)
		}
	}
	slices.Sort(out)
	return out
}

// parseChecks parses and checks expectations against what the scenario runs.
func parseChecks(s *Scenario, list []Expectation, path string) ([]Check, []*strictyaml.FieldError) {
	var e errs
	var out []Check
	for i, x := range list {
		p := strictyaml.IndexPath(path, i)
		if strings.TrimSpace(x.Source) == "" {
			e.add(strictyaml.JoinPath(p, "source"), nil, "required: say where the threshold comes from (a measurement, an SLO, a design figure)")
		}
		c, err := ParseCheck(x.Check)
		if err != nil {
			e.add(strictyaml.JoinPath(p, "check"), x.Check, "%v", err)
			continue
		}
		switch c.Metric.Needs {
		case NeedsOperator:
			if !s.Operator.Enabled {
				e.add(strictyaml.JoinPath(p, "check"), x.Check, "metric %s needs operator.enabled", c.Metric.Name)
			}
		case NeedsBaseline:
			if !s.Baseline {
				e.add(strictyaml.JoinPath(p, "check"), x.Check, "metric %s needs baseline: true", c.Metric.Name)
			}
		case NeedsHandwritten:
			if !s.HandwrittenBaseline {
				e.add(strictyaml.JoinPath(p, "check"), x.Check, "metric %s needs handwrittenBaseline: true", c.Metric.Name)
			}
		case NeedsFloor:
			if s.FloorBaseline == FloorNone {
				e.add(strictyaml.JoinPath(p, "check"), x.Check, "metric %s needs floorBaseline", c.Metric.Name)
			}
		case NeedsFloorGate:
			if !s.FloorGate {
				e.add(strictyaml.JoinPath(p, "check"), x.Check, "metric %s needs floorGate: true", c.Metric.Name)
			}
		case NeedsAttacker:
			if s.Attacker == nil {
				e.add(strictyaml.JoinPath(p, "check"), x.Check, "metric %s needs an attacker", c.Metric.Name)
			}
		}
		if x.Goal != "" {
			if err := c.SetGoal(x.Goal); err != nil {
				e.add(strictyaml.JoinPath(p, "goal"), x.Goal, "%v", err)
			}
		}
		c.Source = strings.Join(strings.Fields(x.Source), " ")
		out = append(out, c)
	}
	return out, e
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// String renders a range as "min..max".
func (r IntRange) String() string { return fmt.Sprintf("%d..%d", r.Min, r.Max) }
