// Package kubelet plays the parts of a cluster the simulator has no binary
// for, so that the operator's components run from the Deployments the
// operator renders, as a cluster would run them: the kubelet (start each
// replica's container as a process of the archgate binary with the
// container's arguments and environment, its Secret, ConfigMap and emptyDir
// volumes materialised to directories, readiness from its probe, preStop and
// termination grace honoured on the way out), the Deployment controller (the
// Deployment's status), and the EndpointSlice controller (the ready replicas
// behind each Service, which kube-apiserver's aggregator routing sends webhook
// calls to).
//
// One thing differs from a node, and it is the only rewrite of what the
// operator rendered (the Sandbox adapter, see Translate): every replica
// shares the host's network and file system instead of having its own, so
// each container port is mapped to a free host port and each mount path to a
// directory, and the arguments that name them are rewritten accordingly.
package kubelet

import (
	"fmt"
	"net"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Sandbox is what a node gives one replica, in the host's terms: the adapter
// between the pod's view (its own IP, ports and mount paths) and the one
// host every replica shares.
type Sandbox struct {
	// Binary is what the container's image runs (its entrypoint): the
	// archgate binary the scenario was given.
	Binary string
	// PodIP is the address the replica serves on: a non-loopback address of
	// the host, since EndpointSlices refuse loopback addresses.
	PodIP string
	// Ports maps each container port to the host port that stands for it.
	Ports map[int32]int
	// Mounts maps each mount path of the container to a host directory.
	Mounts map[string]string
	// Fields are the values of the downward API's fieldRef paths
	// (metadata.name, metadata.namespace).
	Fields map[string]string
	// Env is added to the container's environment (KUBECONFIG: the
	// simulator has no ServiceAccount token controller).
	Env []string
}

// Process is how to run a container and how to reach it.
type Process struct {
	// Command is the program and its arguments.
	Command []string
	// Env is the process's whole environment.
	Env []string
	// ReadyURL is the readiness probe's URL; "" when the container has none.
	ReadyURL string
	// PortAddrs maps each named container port to <podIP>:<hostPort>.
	PortAddrs map[string]string
	// HostPorts maps each named container port to its host port.
	HostPorts map[string]int
	// PreStop is the container's preStop sleep.
	PreStop time.Duration
	// Grace is the pod's termination grace period.
	Grace time.Duration
	// MemoryLimit is the container's memory limit in bytes; 0 for none.
	MemoryLimit int64
}

// defaultGrace is the API's default terminationGracePeriodSeconds.
const defaultGrace = 30 * time.Second

// Translate turns the pod's only container into a process on the host, a
// pure function of the pod spec and the sandbox. Arguments are rewritten only
// where they name what the sandbox maps: a value that is a container port
// ("9443") becomes its host port, an address on a container port (":8080",
// "0.0.0.0:8080") becomes PodIP and the host port, and a path under a mount
// path becomes the same path under the mount's directory.
func Translate(spec *corev1.PodSpec, sb Sandbox) (Process, error) {
	if len(spec.Containers) != 1 {
		return Process{}, fmt.Errorf("pod spec has %d containers, want 1 (init and sidecar containers are not supported)", len(spec.Containers))
	}
	// Refused, not skipped: the container may need what an init container prepares (the
	// controller's copies of credentialProviders.hostFiles).
	if len(spec.InitContainers) > 0 {
		return Process{}, fmt.Errorf("pod spec has init container %s: init containers are not supported", spec.InitContainers[0].Name)
	}
	c := spec.Containers[0]
	p := Process{PortAddrs: map[string]string{}, HostPorts: map[string]int{}, Grace: defaultGrace}
	for _, port := range c.Ports {
		hp, ok := sb.Ports[port.ContainerPort]
		if !ok {
			return Process{}, fmt.Errorf("container %s: port %d (%s) has no host port", c.Name, port.ContainerPort, port.Name)
		}
		if port.Name != "" {
			p.HostPorts[port.Name] = hp
			p.PortAddrs[port.Name] = net.JoinHostPort(sb.PodIP, strconv.Itoa(hp))
		}
	}
	args := append(append([]string(nil), c.Command...), c.Args...)
	if len(c.Command) == 0 {
		args = append([]string{sb.Binary}, c.Args...)
	}
	mounts, err := mountDirs(c, sb)
	if err != nil {
		return Process{}, err
	}
	for i, a := range args[1:] {
		args[i+1] = rewriteArg(a, sb, mounts)
	}
	p.Command = args
	if p.Env, err = environment(c, sb); err != nil {
		return Process{}, err
	}
	if p.ReadyURL, err = readyURL(c, sb); err != nil {
		return Process{}, err
	}
	if l := c.Lifecycle; l != nil && l.PreStop != nil {
		if l.PreStop.Sleep == nil {
			return Process{}, fmt.Errorf("container %s: lifecycle.preStop: only sleep is supported", c.Name)
		}
		p.PreStop = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	if spec.TerminationGracePeriodSeconds != nil {
		p.Grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	if m, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		p.MemoryLimit = m.Value()
	}
	return p, nil
}

// mountDirs maps the container's mount paths to host directories.
func mountDirs(c corev1.Container, sb Sandbox) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		dir, ok := sb.Mounts[m.MountPath]
		if !ok {
			return nil, fmt.Errorf("container %s: volumeMounts %s (%s) has no host directory", c.Name, m.Name, m.MountPath)
		}
		out[path.Clean(m.MountPath)] = dir
	}
	return out, nil
}

// rewriteArg applies the sandbox's port and path mappings to one argument
// ("--flag=value" or a bare value).
func rewriteArg(arg string, sb Sandbox, mounts map[string]string) string {
	prefix, value := "", arg
	if strings.HasPrefix(arg, "-") {
		name, v, ok := strings.Cut(arg, "=")
		if !ok {
			return arg
		}
		prefix, value = name+"=", v
	}
	return prefix + rewriteValue(value, sb, mounts)
}

func rewriteValue(v string, sb Sandbox, mounts map[string]string) string {
	if n, err := strconv.ParseInt(v, 10, 32); err == nil {
		if hp, ok := sb.Ports[int32(n)]; ok {
			return strconv.Itoa(hp)
		}
		return v
	}
	if host, port, err := net.SplitHostPort(v); err == nil && (host == "" || host == "0.0.0.0") {
		if n, err := strconv.ParseInt(port, 10, 32); err == nil {
			if hp, ok := sb.Ports[int32(n)]; ok {
				return net.JoinHostPort(sb.PodIP, strconv.Itoa(hp))
			}
		}
		return v
	}
	if !strings.HasPrefix(v, "/") {
		return v
	}
	clean := path.Clean(v)
	for mp, dir := range mounts {
		if clean == mp {
			return dir
		}
		if rest, ok := strings.CutPrefix(clean, mp+"/"); ok {
			return filepath.Join(dir, filepath.FromSlash(rest))
		}
	}
	return v
}

// environment is the process's environment: the container's variables
// (values and downward-API field references) and the sandbox's.
func environment(c corev1.Container, sb Sandbox) ([]string, error) {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil:
			v, ok := sb.Fields[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("container %s: env %s: fieldRef %s is not supported", c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env = append(env, e.Name+"="+v)
		default:
			return nil, fmt.Errorf("container %s: env %s: only value and fieldRef are supported", c.Name, e.Name)
		}
	}
	return append(env, sb.Env...), nil
}

// readyURL is the readiness probe's URL on the host.
func readyURL(c corev1.Container, sb Sandbox) (string, error) {
	probe := c.ReadinessProbe
	if probe == nil {
		return "", nil
	}
	get := probe.HTTPGet
	if get == nil {
		return "", fmt.Errorf("container %s: readinessProbe: only httpGet is supported", c.Name)
	}
	port, err := containerPort(c, get.Port)
	if err != nil {
		return "", fmt.Errorf("container %s: readinessProbe: %w", c.Name, err)
	}
	hp, ok := sb.Ports[port]
	if !ok {
		return "", fmt.Errorf("container %s: readinessProbe: port %d has no host port", c.Name, port)
	}
	scheme := "http"
	if get.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(sb.PodIP, strconv.Itoa(hp)) + get.Path, nil
}

// containerPort resolves a probe's port (a number or a port name).
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}
