/*
Copyright 2026 The archgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cmdline

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
)

// flag is one flag's definition: its name, its default and its help.
type flag[T any] struct {
	name  string
	value T
	usage string
}

// field is a flag bound to a field of the options struct O: bind defines it on a FlagSet
// storing into the field, render returns the arguments that set the field's value again.
type field[O any] struct {
	name   string
	bind   func(fs *pflag.FlagSet, o *O)
	render func(o *O) []string
}

// kind is how a flag of type T is defined on a FlagSet and how a value of it is written;
// format nil writes the flag alone (a bool that is set).
type kind[T comparable] struct {
	define func(fs *pflag.FlagSet, p *T, name string, value T, usage string)
	format func(T) string
}

// optional binds the flag f to the field at of O; a zero field renders nothing, so the flag's
// default decides (as a zero option means the default in package components).
func optional[O any, T comparable](k kind[T], f flag[T], at func(*O) *T) field[O] {
	return field[O]{
		name: f.name,
		bind: func(fs *pflag.FlagSet, o *O) { k.define(fs, at(o), f.name, f.value, f.usage) },
		render: func(o *O) []string {
			var zero T
			if v := *at(o); v != zero {
				return []string{k.arg(f.name, v)}
			}
			return nil
		},
	}
}

// always binds like optional but renders the field whatever its value: zero means zero (the
// resolved spec.imageInspection settings).
func always[O any, T comparable](k kind[T], f flag[T], at func(*O) *T) field[O] {
	b := optional(k, f, at)
	b.render = func(o *O) []string { return []string{k.arg(f.name, *at(o))} }
	return b
}

// list binds a comma-separated list to the field at of O; it always renders, an empty list as
// "--name=".
func list[O any](f flag[[]string], at func(*O) *[]string) field[O] {
	return field[O]{
		name:   f.name,
		bind:   func(fs *pflag.FlagSet, o *O) { fs.StringSliceVar(at(o), f.name, f.value, f.usage) },
		render: func(o *O) []string { return []string{"--" + f.name + "=" + strings.Join(*at(o), ",")} },
	}
}

func (k kind[T]) arg(name string, v T) string {
	if k.format == nil {
		return "--" + name
	}
	return "--" + name + "=" + k.format(v)
}

// lift turns the fields of P into fields of O, whose P is at.
func lift[O, P any](at func(*O) *P, fields []field[P]) []field[O] {
	out := make([]field[O], 0, len(fields))
	for _, f := range fields {
		out = append(out, field[O]{
			name:   f.name,
			bind:   func(fs *pflag.FlagSet, o *O) { f.bind(fs, at(o)) },
			render: func(o *O) []string { return f.render(at(o)) },
		})
	}
	return out
}

// group turns the fields of G into fields of O, whose *G is at: rendered only when it is set,
// and always set by binding (to the flags' defaults before parsing).
func group[O, G any](at func(*O) **G, fields []field[G]) []field[O] {
	out := make([]field[O], 0, len(fields))
	for _, f := range fields {
		out = append(out, field[O]{
			name: f.name,
			bind: func(fs *pflag.FlagSet, o *O) {
				if *at(o) == nil {
					*at(o) = new(G)
				}
				f.bind(fs, *at(o))
			},
			render: func(o *O) []string {
				if g := *at(o); g != nil {
					return f.render(g)
				}
				return nil
			},
		})
	}
	return out
}

// bindAll defines every field on fs, storing into o.
func bindAll[O any](fs *pflag.FlagSet, o *O, fields []field[O]) {
	for _, f := range fields {
		f.bind(fs, o)
	}
}

// renderAll returns the arguments of every field of o, in the order of fields.
func renderAll[O any](o O, fields []field[O]) []string {
	var args []string
	for _, f := range fields {
		args = append(args, f.render(&o)...)
	}
	return args
}

func text() kind[string] { return textOf[string]() }

// textOf is a string flag of a named string type (v1beta1.LogVerbosityLevel).
func textOf[T ~string]() kind[T] {
	return kind[T]{
		define: func(fs *pflag.FlagSet, p *T, name string, value T, usage string) {
			*p = value
			fs.Var(textValue[T]{p}, name, usage)
		},
		format: func(s T) string { return string(s) },
	}
}

// textValue is a pflag.Value of a named string type (pflag's own string value takes *string).
type textValue[T ~string] struct{ p *T }

func (v textValue[T]) Type() string { return "string" }

func (v textValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v textValue[T]) Set(s string) error {
	*v.p = T(s)
	return nil
}

func integer() kind[int] {
	return kind[int]{define: (*pflag.FlagSet).IntVar, format: strconv.Itoa}
}

func rate() kind[float32] {
	return kind[float32]{define: (*pflag.FlagSet).Float32Var,
		format: func(q float32) string { return strconv.FormatFloat(float64(q), 'f', -1, 32) }}
}

func duration() kind[time.Duration] {
	return kind[time.Duration]{define: (*pflag.FlagSet).DurationVar, format: time.Duration.String}
}

func boolean() kind[bool] {
	return kind[bool]{define: (*pflag.FlagSet).BoolVar}
}

// positiveInteger and positiveDuration refuse zero and negative values at parse time: a
// controller without workers places nothing, and a zero retry delay retries in a busy loop.
func positiveInteger() kind[int] {
	return positiveKind("int", func(s string) (int, error) {
		n, err := strconv.ParseInt(s, 0, strconv.IntSize)
		return int(n), err
	}, strconv.Itoa)
}

func positiveDuration() kind[time.Duration] {
	return positiveKind("duration", time.ParseDuration, time.Duration.String)
}

func positiveKind[T int | time.Duration](typ string, parse func(string) (T, error), format func(T) string) kind[T] {
	return kind[T]{
		define: func(fs *pflag.FlagSet, p *T, name string, value T, usage string) {
			*p = value
			fs.Var(&positive[T]{p: p, typ: typ, parse: parse, format: format}, name, usage)
		},
		format: format,
	}
}

// positive is a pflag.Value of a number that must be above zero.
type positive[T int | time.Duration] struct {
	p      *T
	typ    string
	parse  func(string) (T, error)
	format func(T) string
}

func (v *positive[T]) String() string {
	if v.p == nil {
		return ""
	}
	return v.format(*v.p)
}
func (v *positive[T]) Type() string { return v.typ }

func (v *positive[T]) Set(s string) error {
	n, err := v.parse(s)
	if err != nil {
		return err
	}
	if n <= 0 {
		return errors.New("must be positive")
	}
	*v.p = n
	return nil
}

// namespacedName is a "namespace/name" flag; empty for none (nil).
func namespacedName() kind[*types.NamespacedName] {
	return kind[*types.NamespacedName]{
		define: func(fs *pflag.FlagSet, p **types.NamespacedName, name string, value *types.NamespacedName, usage string) {
			*p = value
			fs.Var(namespacedNameValue{p}, name, usage)
		},
		format: func(n *types.NamespacedName) string { return n.String() },
	}
}

// namespacedNameValue parses "namespace/name" when the flag is set, so that a malformed value
// fails with the other flags instead of when the component starts.
type namespacedNameValue struct{ p **types.NamespacedName }

func (v namespacedNameValue) Type() string { return "namespace/name" }

func (v namespacedNameValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return (*v.p).String()
}

func (v namespacedNameValue) Set(s string) error {
	if s == "" {
		*v.p = nil
		return nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return errors.New("want namespace/name")
	}
	*v.p = &types.NamespacedName{Namespace: ns, Name: name}
	return nil
}
