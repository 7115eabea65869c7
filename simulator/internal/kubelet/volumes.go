package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// materialiseVolumes writes the pod's volumes under dir, one directory per
// volume, and returns each mount path of the container with its directory.
// A Secret or ConfigMap that does not exist (yet) is an error, as a kubelet
// keeps such a pod in ContainerCreating; the caller tries again. Later
// changes of the objects are not propagated (a kubelet would, within a
// minute): the operator rolls the pods when what it mounts changes.
func materialiseVolumes(ctx context.Context, c kubernetes.Interface, namespace string, spec *corev1.PodSpec, dir string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range spec.Volumes {
		vdir := filepath.Join(dir, v.Name)
		if err := os.MkdirAll(vdir, 0o700); err != nil {
			return nil, err
		}
		files, err := volumeFiles(ctx, c, namespace, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		for rel, data := range files {
			p := filepath.Join(vdir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, data, 0o600); err != nil {
				return nil, err
			}
		}
		dirs[v.Name] = vdir
	}
	mounts := map[string]string{}
	for _, ctr := range spec.Containers {
		for _, m := range ctr.VolumeMounts {
			d, ok := dirs[m.Name]
			if !ok {
				return nil, fmt.Errorf("container %s: volumeMounts %s: no such volume", ctr.Name, m.Name)
			}
			mounts[m.MountPath] = filepath.Join(d, filepath.FromSlash(m.SubPath))
		}
	}
	return mounts, nil
}

// volumeFiles reads a volume's files: the keys of a Secret or ConfigMap (or
// their items), nothing for an emptyDir.
func volumeFiles(ctx context.Context, c kubernetes.Interface, namespace string, v corev1.Volume) (map[string][]byte, error) {
	switch {
	case v.EmptyDir != nil:
		return nil, nil
	case v.Secret != nil:
		s, err := c.CoreV1().Secrets(namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return projectKeys(s.Data, v.Secret.Items)
	case v.ConfigMap != nil:
		cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		data := map[string][]byte{}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		for k, b := range cm.BinaryData {
			data[k] = b
		}
		return projectKeys(data, v.ConfigMap.Items)
	default:
		return nil, fmt.Errorf("only secret, configMap and emptyDir volumes are supported")
	}
}

// projectKeys maps data to file paths: every key as its own file, or only
// the items, each to its path.
func projectKeys(data map[string][]byte, items []corev1.KeyToPath) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	out := map[string][]byte{}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("key %q does not exist", it.Key)
		}
		out[it.Path] = b
	}
	return out, nil
}
