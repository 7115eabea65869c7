package testenv

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tests is what Main runs: a *testing.M (an interface, so the simulator's binary, which shares
// this package, does not link the testing package).
type Tests interface{ Run() int }

// Main runs a package's tests against one control plane started with opts, after setup has built
// the package's clients from it, and stops the control plane after them. It returns the exit code
// for os.Exit; a failure to start or to set up is printed and exits 1.
func Main(m Tests, opts Options, setup func(*Env) error) int {
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if err := setup(env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Client is a client on cfg whose scheme holds the types that adds register.
func Client(cfg *rest.Config, adds ...func(*runtime.Scheme) error) (client.Client, error) {
	scheme := runtime.NewScheme()
	builder := runtime.NewSchemeBuilder(adds...)
	if err := builder.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}
