package kubelet

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// webhookLike is a pod spec shaped like the operator's webhook Deployment.
func webhookLike() *corev1.PodSpec {
	return &corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		Containers: []corev1.Container{{
			Name: "webhook",
			Args: []string{"webhook", "--operator-namespace=ns", "--metrics-bind-address=:8080",
				"--health-probe-bind-address=0.0.0.0:8081", "--cert-dir=/var/run/serving-cert", "--port=9443",
				"--registries-conf=/etc/registries/registries.conf", "--log-verbosity=Normal", "--workers=12"},
			Env: []corev1.EnvVar{
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "HTTPS_PROXY", Value: "http://proxy:3128"},
			},
			Ports:          []corev1.ContainerPort{{Name: "webhook", ContainerPort: 9443}, {Name: "metrics", ContainerPort: 8080}, {Name: "health", ContainerPort: 8081}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}}},
			Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
			Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}}},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "serving-cert", MountPath: "/var/run/serving-cert"},
				{Name: "registries", MountPath: "/etc/registries"},
			},
		}},
	}
}

func sandbox() Sandbox {
	return Sandbox{
		Binary: "/bin/archgate", PodIP: "192.0.2.2",
		Ports:  map[int32]int{9443: 40001, 8080: 40002, 8081: 40003},
		Mounts: map[string]string{"/var/run/serving-cert": "/tmp/p/serving-cert", "/etc/registries": "/tmp/p/registries"},
		Fields: map[string]string{"metadata.namespace": "ns", "metadata.name": "pod-1"},
		Env:    []string{"KUBECONFIG=/tmp/kc"},
	}
}

func TestTranslate(t *testing.T) {
	p, err := Translate(webhookLike(), sandbox())
	if err != nil {
		t.Fatal(err)
	}
	wantCmd := []string{"/bin/archgate", "webhook", "--operator-namespace=ns", "--metrics-bind-address=192.0.2.2:40002",
		"--health-probe-bind-address=192.0.2.2:40003", "--cert-dir=/tmp/p/serving-cert", "--port=40001",
		"--registries-conf=/tmp/p/registries/registries.conf", "--log-verbosity=Normal", "--workers=12"}
	if !slices.Equal(p.Command, wantCmd) {
		t.Errorf("command\n got %q\nwant %q", p.Command, wantCmd)
	}
	for _, want := range []string{"POD_NAMESPACE=ns", "HTTPS_PROXY=http://proxy:3128", "KUBECONFIG=/tmp/kc"} {
		if !slices.Contains(p.Env, want) {
			t.Errorf("env %q lacks %s", p.Env, want)
		}
	}
	if want := "http://192.0.2.2:40003/readyz"; p.ReadyURL != want {
		t.Errorf("ready URL %s, want %s", p.ReadyURL, want)
	}
	if p.PortAddrs["metrics"] != "192.0.2.2:40002" || p.HostPorts["webhook"] != 40001 {
		t.Errorf("ports %v %v", p.PortAddrs, p.HostPorts)
	}
	if p.PreStop != 10*time.Second || p.Grace != 30*time.Second {
		t.Errorf("preStop %s grace %s, want 10s and 30s", p.PreStop, p.Grace)
	}
	if p.MemoryLimit != 256<<20 {
		t.Errorf("memory limit %d, want 256 MiB", p.MemoryLimit)
	}
}

func TestTranslateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.PodSpec, *Sandbox)
		want   string
	}{
		{"two containers", func(s *corev1.PodSpec, _ *Sandbox) { s.Containers = append(s.Containers, s.Containers[0]) }, "2 containers"},
		{"an init container", func(s *corev1.PodSpec, _ *Sandbox) {
			s.InitContainers = []corev1.Container{{Name: "copy-host-files"}}
		}, "init container copy-host-files: init containers are not supported"},
		{"unmapped port", func(_ *corev1.PodSpec, sb *Sandbox) { delete(sb.Ports, 8080) }, "port 8080 (metrics) has no host port"},
		{"unmapped mount", func(_ *corev1.PodSpec, sb *Sandbox) { delete(sb.Mounts, "/etc/registries") }, "volumeMounts registries (/etc/registries)"},
		{"secret env", func(s *corev1.PodSpec, _ *Sandbox) {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}})
		}, "env TOKEN: only value and fieldRef"},
		{"unknown field", func(s *corev1.PodSpec, _ *Sandbox) {
			s.Containers[0].Env[0].ValueFrom.FieldRef.FieldPath = "spec.nodeName"
		}, "fieldRef spec.nodeName is not supported"},
		{"exec preStop", func(s *corev1.PodSpec, _ *Sandbox) {
			s.Containers[0].Lifecycle.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}
		}, "only sleep"},
		{"probe port name", func(s *corev1.PodSpec, _ *Sandbox) {
			s.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("nope")
		}, `no container port named "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, sb := webhookLike(), sandbox()
			tc.change(spec, &sb)
			_, err := Translate(spec, sb)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRewriteValue(t *testing.T) {
	sb := sandbox()
	mounts := map[string]string{"/etc/registries": "/tmp/p/registries"}
	for _, tc := range []struct{ in, want string }{
		{"9443", "40001"},
		{"9444", "9444"},
		{":8080", "192.0.2.2:40002"},
		{"0.0.0.0:8081", "192.0.2.2:40003"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"/etc/registries", "/tmp/p/registries"},
		{"/etc/registries/a/b.conf", "/tmp/p/registries/a/b.conf"},
		{"/etc/registriesX/a", "/etc/registriesX/a"},
		{"Normal", "Normal"},
	} {
		if got := rewriteValue(tc.in, sb, mounts); got != tc.want {
			t.Errorf("rewriteValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDeploymentStatus(t *testing.T) {
	for _, tc := range []struct {
		name             string
		replicas         int32
		maxUnavailable   *intstr.IntOrString
		running, updated int32
		wantAvailable    corev1.ConditionStatus
		wantUnavailable  int32
	}{
		{"all running", 2, nil, 2, 2, corev1.ConditionTrue, 0},
		{"one of two (25% of 2 rounds down to 0)", 2, nil, 1, 1, corev1.ConditionFalse, 1},
		{"three of four (25% of 4 is 1)", 4, nil, 3, 3, corev1.ConditionTrue, 1},
		{"none", 2, nil, 0, 0, corev1.ConditionFalse, 2},
		{"maxUnavailable 1 of 2", 2, ptr.To(intstr.FromInt32(1)), 1, 0, corev1.ConditionTrue, 1},
		{"maxUnavailable 100%: available with none, as the Deployment controller says", 2, ptr.To(intstr.FromString("100%")), 0, 0, corev1.ConditionTrue, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tc.replicas)}}
			d.Generation = 7
			if tc.maxUnavailable != nil {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: tc.maxUnavailable}
			}
			st := deploymentStatus(d, tc.running, tc.updated)
			if st.Conditions[0].Type != appsv1.DeploymentAvailable || st.Conditions[0].Status != tc.wantAvailable {
				t.Errorf("Available = %s, want %s", st.Conditions[0].Status, tc.wantAvailable)
			}
			if st.UnavailableReplicas != tc.wantUnavailable || st.AvailableReplicas != tc.running ||
				st.UpdatedReplicas != tc.updated || st.ObservedGeneration != 7 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestProjectKeys(t *testing.T) {
	data := map[string][]byte{"tls.crt": []byte("c"), "127.0.0.1..5000": []byte("ca")}
	all, err := projectKeys(data, nil)
	if err != nil || len(all) != 2 {
		t.Errorf("all keys: %v %v", all, err)
	}
	items, err := projectKeys(data, []corev1.KeyToPath{{Key: "127.0.0.1..5000", Path: "127.0.0.1:5000/ca.crt"}})
	if err != nil || string(items["127.0.0.1:5000/ca.crt"]) != "ca" || len(items) != 1 {
		t.Errorf("items: %v %v", items, err)
	}
	if _, err := projectKeys(data, []corev1.KeyToPath{{Key: "missing", Path: "x"}}); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing key: %v", err)
	}
}
