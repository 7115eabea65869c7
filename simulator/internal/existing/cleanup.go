package existing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/archgate/archgate/operator/api/v1beta1"
)

// DeployNamespace is the namespace deploy/ installs archgate into.
const DeployNamespace = "archgate-system"

// InstalledByAnnotation marks DeployNamespace when a run installed archgate (valued with the
// run's id), so that a clean-up after a killed run knows to uninstall it.
const InstalledByAnnotation = "sim.archgate.io/installed-by"

// Deploy runs hack/deploy.sh (make deploy / make undeploy) with action apply or delete against
// the kubeconfig's cluster, with image as archgate's image (IMG); exactly what a user runs.
func Deploy(ctx context.Context, repoRoot, kubeconfig, action, image string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack", "deploy.sh"), action)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "IMG="+image)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/deploy.sh %s (IMG=%s): %w\n%s", action, image, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// Cleaner removes what a run created in an existing cluster.
type Cleaner struct {
	Client kubernetes.Interface
	CRC    crclient.Client
	// RepoRoot and Kubeconfig run hack/deploy.sh delete when the run installed archgate.
	RepoRoot, Kubeconfig string
	RunID                string
	Logf                 func(format string, args ...any)
}

// cleanupWait bounds each wait of the clean-up (namespaces, the operator's removal).
const cleanupWait = 5 * time.Minute

// Clean deletes, in this order, and continuing past failures: the run's namespaces (and waits
// until they are gone: their pods leave through the namespace controller and kwok), the run's
// nodes, the ClusterPodPlacementConfig when the run created it (the operator releases anything
// gated), the run's objects in DeployNamespace, and archgate itself (hack/deploy.sh delete)
// when the run installed it. It is also `simulator cleanup --run ID`, after a killed run.
func (c Cleaner) Clean(ctx context.Context) error {
	sel := metav1.ListOptions{LabelSelector: RunLabel + "=" + c.RunID}
	var errs []error
	nss, err := c.Client.CoreV1().Namespaces().List(ctx, sel)
	errs = append(errs, err)
	if err == nil {
		for _, ns := range nss.Items {
			errs = append(errs, ignoreNotFound(c.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})))
		}
		errs = append(errs, c.waitGone(ctx, "namespaces", func() (int, error) {
			l, err := c.Client.CoreV1().Namespaces().List(ctx, sel)
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}))
	}
	errs = append(errs, c.Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	errs = append(errs, c.deleteClusterConfig(ctx))
	for _, del := range []func(context.Context, metav1.DeleteOptions, metav1.ListOptions) error{
		c.Client.CoreV1().ConfigMaps(DeployNamespace).DeleteCollection, c.Client.CoreV1().Secrets(DeployNamespace).DeleteCollection,
	} {
		errs = append(errs, del(ctx, metav1.DeleteOptions{}, sel))
	}
	errs = append(errs, c.uninstall(ctx))
	err = errors.Join(errs...)
	if err != nil {
		return fmt.Errorf("cleaning up run %s (what is left carries %s=%s; simulator cleanup --run %s retries): %w", c.RunID, RunLabel, c.RunID, c.RunID, err)
	}
	c.Logf("cleaned up run %s: namespaces, nodes and configuration deleted", c.RunID)
	return nil
}

// deleteClusterConfig deletes the ClusterPodPlacementConfig if the run created it (it carries
// the run's label) and waits until the operator has finalized it.
func (c Cleaner) deleteClusterConfig(ctx context.Context) error {
	cppc := &v1beta1.ClusterPodPlacementConfig{}
	err := c.CRC.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, cppc)
	if apierrors.IsNotFound(err) || (err == nil && cppc.Labels[RunLabel] != c.RunID) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ClusterPodPlacementConfig %s: %w", v1beta1.SingletonName, err)
	}
	if err := crclient.IgnoreNotFound(c.CRC.Delete(ctx, cppc)); err != nil {
		return fmt.Errorf("deleting ClusterPodPlacementConfig %s: %w", v1beta1.SingletonName, err)
	}
	return c.waitGone(ctx, "ClusterPodPlacementConfig", func() (int, error) {
		err := c.CRC.Get(ctx, types.NamespacedName{Name: v1beta1.SingletonName}, &v1beta1.ClusterPodPlacementConfig{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 1, err
	})
}

// uninstall runs hack/deploy.sh delete when DeployNamespace says this run installed archgate.
func (c Cleaner) uninstall(ctx context.Context) error {
	ns, err := c.Client.CoreV1().Namespaces().Get(ctx, DeployNamespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && ns.Annotations[InstalledByAnnotation] != c.RunID) {
		return nil
	}
	if err != nil {
		return err
	}
	c.Logf("uninstalling archgate (hack/deploy.sh delete)")
	ctx, cancel := context.WithTimeout(ctx, cleanupWait)
	defer cancel()
	return Deploy(ctx, c.RepoRoot, c.Kubeconfig, "delete", "")
}

// waitGone polls count until it returns 0, for at most cleanupWait.
func (c Cleaner) waitGone(ctx context.Context, what string, count func() (int, error)) error {
	deadline := time.Now().Add(cleanupWait)
	for {
		n, err := count()
		if err == nil && n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s of the run still there after %s (last error: %v)", n, what, cleanupWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// MarkInstalled annotates DeployNamespace with the run that installed archgate.
func MarkInstalled(ctx context.Context, c kubernetes.Interface, runID string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, InstalledByAnnotation, runID)
	_, err := c.CoreV1().Namespaces().Patch(ctx, DeployNamespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("marking namespace %s as installed by run %s: %w", DeployNamespace, runID, err)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
