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

// Package fieldpath walks the fields of options structs by dotted path, for the round-trip
// tests of the command line (package cmdline and cmd/archgate), which must cover every field.
package fieldpath

import (
	"reflect"
	"strings"
)

// Leaves lists the dotted paths of typ's fields, walking into structs and pointers to structs
// unless leaf names them.
func Leaves(typ reflect.Type, leaf func(path string) bool) []string {
	return leaves(typ, "", leaf)
}

func leaves(typ reflect.Type, prefix string, leaf func(string) bool) []string {
	var out []string
	for f := range typ.Fields() {
		path := prefix + f.Name
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if !leaf(path) && ft.Kind() == reflect.Struct {
			out = append(out, leaves(ft, path+".", leaf)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// At returns the settable field at path of v (addressable), allocating the nil pointers on
// the way.
func At(v reflect.Value, path string) reflect.Value {
	for name := range strings.SplitSeq(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return v
}
