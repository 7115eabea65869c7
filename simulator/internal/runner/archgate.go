package runner

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
	opcomponents "github.com/archgate/archgate/operator/pkg/components"
	"github.com/archgate/archgate/operator/pkg/testing/metricsreader"
	"github.com/archgate/archgate/simulator/internal/operand"
	"github.com/archgate/archgate/simulator/internal/report"
	"github.com/archgate/archgate/simulator/internal/scenario"
)

// components is how archgate's webhook and controller run in a run, one home per mode for
// what differs between them. Implementations: renderedComponents (operator mode: the
// operator's Deployments run by the simulator's kubelet), directComponents (direct mode:
// the components started with the scenario's settings) and installedComponents (installed on
// an existing cluster, out of the run's sight); noComponents when archgate is off. The cluster
// that started them stops them.
type components interface {
	// err reports a component that stopped on its own.
	err() error
	// processes are the components' processes that serve pprof.
	processes() []*operand.Process
	// count starts counting the components' metrics and restarts for a pass.
	count() componentCount
	// startLocal starts workload namespace ns's local components where the run, not the
	// operator, starts them (direct mode with clusterConfig.localPlacement).
	startLocal(ctx context.Context, ns string) error
	// step builds a timeline event that acts on the components or their configuration
	// (controllerRestart, controllerDown, webhookDown, clusterConfigChanged,
	// clusterConfigDeleted), filling rec's failover or registration record; false for other
	// events. ctx outlives the pass: components started again run under it.
	step(ctx context.Context, ev scenario.Event, epoch time.Time, rec *report.AppliedEvent) (step, bool)
}

// componentCount reads the components' stats since counting started; nil when not visible.
type componentCount func() (*report.OperatorStats, error)

// installedComponents is archgate as deploy/ installs it on an existing cluster: it runs in the
// cluster's pods, whose failures, metrics and processes the run does not see, and the
// timeline is refused against a cluster (existing.Unsupported).
type installedComponents struct{}

var (
	_ components = installedComponents{}
	_ components = noComponents{}
	_ components = (*renderedComponents)(nil)
	_ components = (*directComponents)(nil)
)

func (installedComponents) err() error                               { return nil }
func (installedComponents) processes() []*operand.Process            { return nil }
func (installedComponents) count() componentCount                    { return noCount }
func (installedComponents) startLocal(context.Context, string) error { return nil }
func (installedComponents) step(context.Context, scenario.Event, time.Time, *report.AppliedEvent) (step, bool) {
	return step{}, false
}

// noComponents is a run without archgate (operator.enabled false): nothing runs, nothing counts.
type noComponents struct{ installedComponents }

func noCount() (*report.OperatorStats, error) { return nil, nil }

// globalPullSecretName is the global pull secret in the operator namespace.
const globalPullSecretName = "sim-global-pull"

// registryCertsConfigMap holds the registry's CA for spec.registryCertsConfigmapRef, keyed
// "<host>..<port>".
const registryCertsConfigMap = "sim-registry-certs"

// adminConfig writes archgate's configuration as a cluster's admin does: the registry's CA
// ConfigMap, the global pull secret and the ClusterPodPlacementConfig, in archgate's namespace.
type adminConfig struct {
	crc       crclient.Client
	namespace string
	// spec is the scenario's ClusterPodPlacementConfig spec; global whether it has a global
	// pull secret.
	spec   v1beta1.ClusterPodPlacementConfigSpec
	global bool
	// certsRef is the registryCertsConfigmapRef write set (nil without a CA).
	certsRef *v1beta1.NamespacedObjectReference
	// labels go on everything written (an existing cluster's run label).
	labels map[string]string
}

// write creates the registry's CA ConfigMap (when reg has a CA), the global pull secret (when
// the scenario has one) and the ClusterPodPlacementConfig.
func (a *adminConfig) write(ctx context.Context, reg registryAccess) error {
	if reg.ca != nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: registryCertsConfigMap, Labels: a.labels},
			Data:       map[string]string{strings.Replace(reg.host, ":", "..", 1): string(reg.ca)},
		}
		if err := a.crc.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", a.namespace, cm.Name, err)
		}
		a.certsRef = &v1beta1.NamespacedObjectReference{Namespace: a.namespace, Name: registryCertsConfigMap}
	}
	if ref := a.globalPullSecret(); ref != nil {
		secret := pullSecret(ref.Namespace, ref.Name, reg.host, reg.user, reg.password)
		secret.Labels = a.labels
		if err := createPullSecret(ctx, a.crc, secret); err != nil {
			return err
		}
	}
	return a.create(ctx)
}

// globalPullSecret is the global pull secret's name; nil when the scenario has none.
func (a *adminConfig) globalPullSecret() *types.NamespacedName {
	if !a.global {
		return nil
	}
	return &types.NamespacedName{Namespace: a.namespace, Name: globalPullSecretName}
}

// clusterConfig is the ClusterPodPlacementConfig of the spec users write, with the
// references the simulator sets.
func (a *adminConfig) clusterConfig(userSpec v1beta1.ClusterPodPlacementConfigSpec) *v1beta1.ClusterPodPlacementConfig {
	spec := *userSpec.DeepCopy()
	if a.global {
		spec.GlobalPullSecretRef = &v1beta1.NamespacedObjectReference{Namespace: a.namespace, Name: globalPullSecretName}
	}
	spec.RegistryCertsConfigmapRef = a.certsRef
	return &v1beta1.ClusterPodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Name: v1beta1.SingletonName, Labels: a.labels}, Spec: spec}
}

func (a *adminConfig) create(ctx context.Context) error {
	if err := a.crc.Create(ctx, a.clusterConfig(a.spec)); err != nil {
		return fmt.Errorf("creating the ClusterPodPlacementConfig: %w", err)
	}
	return nil
}

func (a *adminConfig) delete(ctx context.Context) error {
	return crclient.IgnoreNotFound(a.crc.Delete(ctx, a.clusterConfig(a.spec)))
}

// replace replaces the ClusterPodPlacementConfig's spec, as an admin edits it.
func (a *adminConfig) replace(ctx context.Context, spec v1beta1.ClusterPodPlacementConfigSpec) error {
	want := a.clusterConfig(spec)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &v1beta1.ClusterPodPlacementConfig{}
		if err := a.crc.Get(ctx, crclient.ObjectKey{Name: v1beta1.SingletonName}, cur); err != nil {
			return err
		}
		cur.Spec = want.Spec
		return a.crc.Update(ctx, cur)
	})
}

// step builds the clusterConfigDeleted event: the ClusterPodPlacementConfig deleted, and
// created again after recreateAfter when set.
func (a *adminConfig) step(ev scenario.Event) (step, bool) {
	if ev.ClusterConfigDeleted == nil {
		return step{}, false
	}
	st := step{apply: a.delete}
	if d := ev.ClusterConfigDeleted.RecreateAfter.D(); d > 0 {
		st.revert, st.hold = a.create, d
	}
	return st, true
}

// pullSecret is a kubernetes.io/dockerconfigjson secret holding user's password for host.
func pullSecret(ns, name, host, user, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	// Marshalling maps of strings cannot fail.
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"username": user, "password": password, "auth": auth},
	}})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
}

func createPullSecret(ctx context.Context, c crclient.Client, secret *corev1.Secret) error {
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pull secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// podPlacementConfigs are the PodPlacementConfigs of workload namespace ns, the i-th.
func podPlacementConfigs(s *scenario.Scenario, ns string, i int) []*v1beta1.PodPlacementConfig {
	var out []*v1beta1.PodPlacementConfig
	for _, p := range s.Operator.PodPlacementConfigs {
		if p.Namespaces != 0 && i >= p.Namespaces {
			continue
		}
		out = append(out, &v1beta1.PodPlacementConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}, Spec: *p.Spec.DeepCopy()})
	}
	return out
}

// metricsReaderServiceAccount is the ServiceAccount the simulator scrapes the components'
// metrics as, bound to the metrics reader ClusterRole like a cluster's Prometheus.
const metricsReaderServiceAccount = "archgate-simulator-metrics"

// metricsToken grants the metrics reader role to a ServiceAccount of namespace ns and returns
// a token of it from the TokenRequest API, valid for a day (longer than any run).
func metricsToken(ctx context.Context, k *kube, ns string) (string, error) {
	reader := metricsreader.Reader{Namespace: ns, ServiceAccount: metricsReaderServiceAccount}
	if err := metricsreader.Grant(ctx, k.cfg, reader); err != nil {
		return "", fmt.Errorf("granting the metrics reader role: %w", err)
	}
	return metricsreader.Token(ctx, k.cfg, reader, 24*time.Hour)
}

// The first-gate waits: with the operator it rolls the components out first.
const (
	renderedGateWait = 90 * time.Second
	directGateWait   = 30 * time.Second
)

// waitGated dry-runs pod creations until the apiserver calls the webhook and the pod comes
// back gated (or placed at admission), for at most wait.
func (p probe) waitGated(ctx context.Context, crc crclient.Client, host string, wait time.Duration) error {
	gated := func(pod *corev1.Pod) bool {
		return v1beta1.HasSchedulingGate(&pod.Spec) || pod.Labels[v1beta1.LabelSchedulingGate] == v1beta1.LabelValueAdmission
	}
	return p.until(ctx, crc, host, wait, "the webhook gated a dry-run pod", gated)
}

// rolloutWait bounds the wait for the operator's first rollout: the webhook's and the
// controller's replicas start one after another and each syncs its caches.
const rolloutWait = 2 * time.Minute

// waitRolledOut waits, as `kubectl wait` would, until the ClusterPodPlacementConfig says every
// component runs the latest configuration on all its replicas (Available True, Progressing
// False, for its current generation), and until a controller replica holds the lease in
// namespace ns. Before that, replicas are still starting and syncing their caches, and a pass
// would measure their start-up: the first pods wait for a leader, and the scheduler for the CPU.
func waitRolledOut(ctx context.Context, k *kube, ns string) error {
	deadline := time.Now().Add(rolloutWait)
	for {
		why := notReady(ctx, k, ns)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator did not roll its components out within %s: %s", rolloutWait, why)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// notReady says why archgate has not rolled out yet (see waitRolledOut), or "".
func notReady(ctx context.Context, k *kube, ns string) string {
	var cppc v1beta1.ClusterPodPlacementConfig
	if err := k.crc.Get(ctx, crclient.ObjectKey{Name: v1beta1.SingletonName}, &cppc); err != nil {
		return err.Error()
	}
	if why := notRolledOut(&cppc); why != "" {
		return why
	}
	lease, err := k.client.CoordinationV1().Leases(ns).Get(ctx, opcomponents.DefaultLeaderElectionID, metav1.GetOptions{})
	switch {
	case err != nil:
		return "reading the controller's lease: " + err.Error()
	case ptr.Deref(lease.Spec.HolderIdentity, "") == "":
		return "no controller replica holds the lease " + opcomponents.DefaultLeaderElectionID
	}
	return ""
}

// notRolledOut says why the ClusterPodPlacementConfig does not report a finished rollout, or
// "" when it does; a pure rule.
func notRolledOut(c *v1beta1.ClusterPodPlacementConfig) string {
	if c.Status.ObservedGeneration < c.Generation {
		return fmt.Sprintf("ClusterPodPlacementConfig %s: status.observedGeneration %d, generation %d", c.Name, c.Status.ObservedGeneration, c.Generation)
	}
	for _, want := range []struct {
		condition string
		status    metav1.ConditionStatus
	}{{v1beta1.ConditionAvailable, metav1.ConditionTrue}, {v1beta1.ConditionProgressing, metav1.ConditionFalse}} {
		got := meta.FindStatusCondition(c.Status.Conditions, want.condition)
		switch {
		case got == nil:
			return fmt.Sprintf("ClusterPodPlacementConfig %s: no %s condition yet", c.Name, want.condition)
		case got.Status != want.status || got.ObservedGeneration < c.Generation:
			return fmt.Sprintf("ClusterPodPlacementConfig %s: %s is %s (%s) for generation %d, want %s for %d",
				c.Name, want.condition, got.Status, got.Message, got.ObservedGeneration, want.status, c.Generation)
		}
	}
	return ""
}

// counting is the components' counters at the start of a pass.
func counting(counters *operand.Counters, restarts func() (exits, ooms map[string]int)) componentCount {
	base := counters.Snapshot()
	var exitBase, oomBase map[string]int
	if restarts != nil {
		exitBase, oomBase = restarts()
	}
	return func() (*report.OperatorStats, error) {
		o, err := operatorStats(counters.Snapshot().Sub(base))
		if o != nil && restarts != nil {
			exits, ooms := restarts()
			o.Restarts, o.OOMKills = since(exits, exitBase), since(ooms, oomBase)
		}
		return o, err
	}
}

// operatorStats reads the operator's counters, structurally, by the names
// the operator defines them with; every metric must be there.
func operatorStats(now operand.Snapshot) (*report.OperatorStats, error) {
	var errs []error
	read := func(v float64, err error) float64 {
		errs = append(errs, err)
		return v
	}
	byLabel := func(v map[string]float64, err error) map[string]float64 {
		errs = append(errs, err)
		return v
	}
	o := &report.OperatorStats{
		CacheHits:        read(now.Sum(opcomponents.MetricInspectCacheHits)),
		CacheMisses:      read(now.Sum(opcomponents.MetricInspectCacheMisses)),
		CacheDedupWaits:  read(now.Sum(opcomponents.MetricInspectCacheDedupWaits)),
		Inspections:      read(now.Count(opcomponents.MetricInspectDuration)),
		InspectionErrors: byLabel(now.ByLabel(opcomponents.MetricInspectErrors, opcomponents.LabelInspectReason)),
		WebhookGated:     read(now.Sum(opcomponents.MetricWebhookPodsGated)),
		WebhookSkipped:   byLabel(now.ByLabel(opcomponents.MetricWebhookPodsSkipped, opcomponents.LabelWebhookReason)),
		Counters:         now.Flat(),
	}
	if n := o.CacheHits + o.CacheMisses; n > 0 {
		o.CacheHitRate = o.CacheHits / n
	}
	means, counts, err := now.MeansByLabel(opcomponents.MetricPlacementPhaseDuration, opcomponents.LabelPlacementPhase)
	errs = append(errs, err)
	if len(means) > 0 {
		o.PhaseMeanSeconds, o.Reconciles = means, slices.Max(slices.Collect(maps.Values(counts)))
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("reading the operator's metrics: %w", err)
	}
	return o, nil
}

// since is now − base by key, keeping the keys that grew.
func since(now, base map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - base[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
