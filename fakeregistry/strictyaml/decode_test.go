package strictyaml

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// duration decodes itself from a JSON string such as "2s".
type duration struct{ time.Duration }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	d.Duration = v
	return err
}

type Common struct {
	Name string `json:"name"`
}

type item struct {
	Tags  []string `json:"tags"`
	Count uint8    `json:"count"`
}

type doc struct {
	Common  `json:",inline"`
	Items   []item            `json:"items"`
	Ratio   float64           `json:"ratio"`
	On      bool              `json:"on"`
	Wait    duration          `json:"wait"`
	Labels  map[string]string `json:"labels"`
	private int
}

func TestDecode(t *testing.T) {
	opts := Options{Describe: map[reflect.Type]string{reflect.TypeFor[duration](): "a duration such as 2s"}}
	tests := map[string]struct {
		yaml string
		want []FieldError
	}{
		"valid, embedded field and alias": {yaml: "name: a\nitems: [&i {tags: [x], count: 2}, *i]\nwait: 2s\n"},
		"unknown field with a hint": {yaml: "name: a\nitesm: []\n",
			want: []FieldError{{Line: 2, Column: 1, Path: "itesm", Value: "[]", Reason: `unknown field (did you mean "items"?)`}}},
		"key case matters": {yaml: "Name: a\n",
			want: []FieldError{{Line: 1, Column: 1, Path: "Name", Value: `"a"`, Reason: `unknown field (did you mean "name"?)`}}},
		"every error at once, with list indices": {yaml: "items:\n  - {tags: [v1, 1.10], count: 300}\n  - {tags: [true]}\n",
			want: []FieldError{
				{Line: 2, Column: 17, Path: "items[0].tags[1]", Value: "1.10", Reason: `wrong type, want a string: YAML reads 1.10 as a float; quote it: "1.10"`},
				{Line: 2, Column: 31, Path: "items[0].count", Value: "300", Reason: "wrong type, want a non-negative integer"},
				{Line: 3, Column: 13, Path: "items[1].tags[0]", Value: "true", Reason: `wrong type, want a string: YAML reads true as a boolean; quote it: "true"`},
			}},
		"wrong types": {yaml: "ratio: .inf\non: yes please\nlabels: [a]\n",
			want: []FieldError{
				{Line: 1, Column: 8, Path: "ratio", Value: ".inf", Reason: "wrong type, want a number"},
				{Line: 2, Column: 5, Path: "on", Value: `"yes please"`, Reason: "wrong type, want true or false"},
				{Line: 3, Column: 9, Path: "labels", Value: `["a"]`, Reason: "wrong type, want a mapping"},
			}},
		"self-decoding type": {yaml: "wait: 600\n",
			want: []FieldError{{Line: 1, Column: 7, Path: "wait", Value: "600", Reason: "want a duration such as 2s"}}},
		"duplicate key": {yaml: "name: a\nname: b\n",
			want: []FieldError{{Line: 2, Column: 1, Reason: `invalid YAML: yaml: unmarshal errors: line 2: key "name" already set in map`}}},
		"not YAML":       {yaml: "name: [a\n", want: []FieldError{{Line: 1, Column: 1, Reason: "invalid YAML: yaml: line 1: did not find expected ',' or ']'"}}},
		"empty document": {yaml: "", want: []FieldError{{Reason: "empty document"}}},
		"not a mapping":  {yaml: "[a]\n", want: []FieldError{{Line: 1, Column: 1, Value: `["a"]`, Reason: "wrong type, want a mapping"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var d doc
			_, errs := Decode([]byte(tc.yaml), &d, opts)
			var got []FieldError
			for _, e := range errs {
				got = append(got, *e)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLocate: errors of later validation, which know only their path, get the position of the
// value (or of the key, for unknown fields; of the deepest ancestor for a missing field).
func TestLocate(t *testing.T) {
	root, errs := Decode([]byte("name: a\nitems:\n  - tags: [x, y]\n"), &doc{}, Options{})
	if len(errs) > 0 {
		t.Fatal(Join("f.yaml", errs))
	}
	got := Locate(root, []*FieldError{
		Field("items[0].tags[1]", "y", "invalid tag"),
		Field("items[0].count", 0, "must be at least 1"),
	})
	want := [][2]int{{3, 15}, {3, 5}}
	for i, e := range got {
		if [2]int{e.Line, e.Column} != want[i] {
			t.Errorf("%s: at %d:%d, want %d:%d", e.Path, e.Line, e.Column, want[i][0], want[i][1])
		}
	}
	if msg := Join("f.yaml", got).Error(); msg != "f.yaml:3:15: items[0].tags[1]: invalid tag (value \"y\")\nf.yaml:3:5: items[0].count: must be at least 1 (value 0)" {
		t.Errorf("message: %q", msg)
	}
}
