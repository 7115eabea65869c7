package scenario

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archgate/archgate/fakeregistry/strictyaml"
)

// decodeOptions word the scenario's self-decoding types in errors.
var decodeOptions = strictyaml.Options{Describe: map[reflect.Type]string{
	reflect.TypeFor[Duration]():          "a duration such as 200ms or 1m30s",
	reflect.TypeFor[metav1.Duration]():   "a duration such as 200ms or 1m30s",
	reflect.TypeFor[resource.Quantity](): "a quantity such as 500m, 2 or 128Gi",
}}
