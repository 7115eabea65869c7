package strictyaml

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Locate sets the line and column of every error that has none from its path in root: the key
// of a mapping entry for unknown fields, otherwise the value; the deepest ancestor found when
// the path is missing (a defaulted field). A nil root leaves the errors as they are.
func Locate(root *yaml.Node, errs []*FieldError) []*FieldError {
	if root == nil {
		return errs
	}
	for _, e := range errs {
		if e.Line != 0 {
			continue
		}
		key, n, _ := walk(root, e.Path)
		if key != nil && strings.HasPrefix(e.Reason, reasonUnknownField) {
			n = key
		}
		e.Line, e.Column = n.Line, n.Column
	}
	return errs
}

// walk follows path from root and returns the deepest node reached with its mapping key (nil
// for list elements and the root), and whether the whole path was found.
func walk(root *yaml.Node, path string) (key, n *yaml.Node, found bool) {
	n = root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, seg := range splitPath(path) {
		n = resolve(n)
		k, next := child(n, seg)
		if next == nil {
			return key, n, false
		}
		key, n = k, next
	}
	return key, n, true
}

// child returns the key and value node of one path segment below n, nil when absent.
func child(n *yaml.Node, seg pathSegment) (key, value *yaml.Node) {
	switch {
	case seg.isIndex && n.Kind == yaml.SequenceNode && seg.index < len(n.Content):
		return nil, n.Content[seg.index]
	case !seg.isIndex && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg.name {
				key, value = n.Content[i], n.Content[i+1]
			}
		}
	}
	return key, value
}

// pathSegment is one field name or list index of a field path.
type pathSegment struct {
	name    string
	index   int
	isIndex bool
}

// splitPath splits "a.b[2].c" into a, b, [2], c.
func splitPath(path string) []pathSegment {
	var out []pathSegment
	for part := range strings.SplitSeq(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, pathSegment{name: name})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			if !ok {
				break
			}
			if i, err := strconv.Atoi(num); err == nil {
				out = append(out, pathSegment{index: i, isIndex: true})
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
