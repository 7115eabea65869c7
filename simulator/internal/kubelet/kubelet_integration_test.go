//go:build integration

package kubelet_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/archgate/archgate/operator/pkg/testing/testenv"
	"github.com/archgate/archgate/operator/pkg/testing/testenv/procfs"
	"github.com/archgate/archgate/simulator/internal/kubelet"
)

// helperEnv, set in the Deployment's container env (which the kubelet passes
// on), makes the test binary the container: it serves the file --file names
// on --web, and /readyz on --health, until SIGTERM.
const helperEnv = "KUBELET_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helper(args []string) int {
	fs := flag.NewFlagSet("helper", flag.ContinueOnError)
	web, health, file := fs.String("web", "", ""), fs.String("health", "", ""), fs.String("file", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, _ *http.Request) {
		b, err := os.ReadFile(*file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %s", os.Getenv("POD_NAME"), b)
	})
	ready := http.NewServeMux()
	ready.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
	for addr, h := range map[string]http.Handler{*web: mux, *health: ready} {
		srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: time.Second}
		go func() { _ = srv.ListenAndServe() }()
	}
	<-ctx.Done()
	return 0
}

const ns = "kubelet-test"

// TestKubeletRunsDeployments runs a Deployment shaped like the operator's through the kubelet:
// readiness, Deployment status, EndpointSlices reaching the replicas on the host's address, a
// mounted Secret and a downward-API variable, a template change that rolls the replicas, and a
// Hold that leaves the Deployment unavailable.
func TestKubeletRunsDeployments(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c := kubernetes.NewForConfigOrDie(env.Config)
	ctx := t.Context()
	hostIP, err := kubelet.HostIP()
	if err != nil {
		t.Skip(err)
	}
	createObjects(ctx, t, c)
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	k := kubelet.New(kubelet.Options{Client: c, Namespace: ns, Binary: os.Args[0], HostIP: hostIP,
		Kubeconfig: "/nonexistent", Dir: t.TempDir(), LogDir: t.TempDir(), Logf: t.Logf})
	go func() { done <- k.Run(kctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, p := range procfs.Children(os.Getpid()) {
			if p.Name != "kube-apiserver" && p.Name != "etcd" {
				t.Errorf("%s (pid %d) still running after the kubelet stopped", p.Name, p.PID)
			}
		}
	})

	waitFor(t, "2 available replicas serving the Secret", func() error { return serving(ctx, c, hostIP, 2, "secret-value") })
	d, err := c.AppsV1().Deployments(ns).Get(ctx, "helper", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 2 {
		t.Errorf("status %+v, want generation %d observed and 2 updated", d.Status, d.Generation)
	}

	d.Spec.Template.Spec.Containers[0].Args[3] = "--file=/etc/c/a"
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rolled replicas serving the ConfigMap", func() error { return serving(ctx, c, hostIP, 2, "config-value") })

	k.Hold("helper")
	waitFor(t, "no available replica and no endpoint while held", func() error {
		if err := available(ctx, c, 0, corev1.ConditionFalse); err != nil {
			return err
		}
		return serving(ctx, c, hostIP, 0, "")
	})
	k.Release("helper")
	waitFor(t, "2 available replicas after the release", func() error { return serving(ctx, c, hostIP, 2, "config-value") })

	// A memory limit below the helper's RSS: the kubelet kills it as the
	// kernel would, restarts it and counts both.
	if exits, ooms := k.Restarts(); len(exits)+len(ooms) != 0 {
		t.Errorf("restarts %v, OOM kills %v before any limit, want none", exits, ooms)
	}
	if d, err = c.AppsV1().Deployments(ns).Get(ctx, "helper", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a replica killed over its memory limit and restarted", func() error {
		if exits, ooms := k.Restarts(); ooms["helper"] == 0 || exits["helper"] == 0 {
			return fmt.Errorf("restarts %v, OOM kills %v", exits, ooms)
		}
		return nil
	})
}

func createObjects(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	labels := map[string]string{"app": "helper"}
	objs := []func() error{
		func() error {
			_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
				Data: map[string][]byte{"key": []byte("secret-value")}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"},
				Data: map[string]string{"a": "config-value"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "helper"},
				Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "web", Port: 443, TargetPort: intstr.FromString("web")}}}},
				metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.AppsV1().Deployments(ns).Create(ctx, helperDeployment(labels), metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objs {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
}

func helperDeployment(labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "helper"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers: []corev1.Container{{
						Name: "helper", Image: "helper:test",
						Args: []string{"helper", "--web=:8443", "--health=:8081", "--file=/etc/s/key"},
						Env: []corev1.EnvVar{{Name: helperEnv, Value: "1"},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
						Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8443}, {Name: "health", ContainerPort: 8081}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}}},
						Lifecycle:    &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/etc/s"}, {Name: "c", MountPath: "/etc/c"}, {Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
						{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// available checks the Deployment's available replicas and Available condition.
func available(ctx context.Context, c kubernetes.Interface, n int32, cond corev1.ConditionStatus) error {
	d, err := c.AppsV1().Deployments(ns).Get(ctx, "helper", metav1.GetOptions{})
	if err != nil {
		return err
	}
	got := corev1.ConditionUnknown
	for _, x := range d.Status.Conditions {
		if x.Type == appsv1.DeploymentAvailable {
			got = x.Status
		}
	}
	if d.Status.AvailableReplicas != n || got != cond {
		return fmt.Errorf("%d available, Available %s; want %d, %s", d.Status.AvailableReplicas, got, n, cond)
	}
	return nil
}

// serving checks that n EndpointSlices of the Service point at the host's address and that
// each replica behind them answers with the content want (and its own pod name).
func serving(ctx context.Context, c kubernetes.Interface, hostIP string, n int, want string) error {
	if n > 0 {
		if err := available(ctx, c, int32(n), corev1.ConditionTrue); err != nil {
			return err
		}
	}
	slices, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=helper"})
	if err != nil {
		return err
	}
	if len(slices.Items) != n {
		return fmt.Errorf("%d EndpointSlices, want %d", len(slices.Items), n)
	}
	for _, s := range slices.Items {
		if len(s.Endpoints) != 1 || len(s.Ports) != 1 || s.Endpoints[0].Addresses[0] != hostIP || s.Endpoints[0].TargetRef == nil {
			return fmt.Errorf("slice %s: endpoints %+v ports %+v, want one endpoint at %s with a pod reference", s.Name, s.Endpoints, s.Ports, hostIP)
		}
		url := "http://" + net.JoinHostPort(hostIP, strconv.Itoa(int(*s.Ports[0].Port))) + "/file"
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if exp := s.Endpoints[0].TargetRef.Name + " " + want; string(body) != exp {
			return fmt.Errorf("%s answered %q, want %q", url, body, exp)
		}
	}
	return nil
}

// waitFor polls check until it passes, for at most a minute.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond) // polling interval of a bounded wait, not synchronisation
	}
}
