package worlds

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/goccy/go-yaml/ast"
)

// fractionsIntoInts reports the first number with a fraction written where
// the file format wants an integer (budget: 1.5): the YAML library keeps
// its whole part without a word. It follows the file structs from root as
// the decoder does; a type that reads itself (UnmarshalYAML) is not
// followed (its weights and amounts are not checked), nor is an alias. A
// recorded file (lim.Recorded) is not checked: it reads as it did then.
func fractionsIntoInts(name string, root ast.Node, lim Limits) *Error {
	if lim.Recorded {
		return nil
	}
	var walk func(n ast.Node, t reflect.Type, path string) *Error
	walk = func(n ast.Node, t reflect.Type, path string) *Error {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if reflect.PointerTo(t).Implements(selfReading) {
			return priorityFractions(name, n, t, path)
		}
		switch n := n.(type) {
		case *ast.TagNode:
			return walk(n.Value, t, path)
		case *ast.AnchorNode:
			return walk(n.Value, t, path)
		case *ast.FloatNode:
			if isInt(t.Kind()) {
				return fractionAt(name, n, path, "expected an integer")
			}
		case *ast.SequenceNode:
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			for i, v := range n.Values {
				if e := walk(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); e != nil {
					return e
				}
			}
		case *ast.MappingNode:
			for _, mv := range n.Values {
				if e := walk(mv, t, path); e != nil {
					return e
				}
			}
		case *ast.MappingValueNode:
			key := keyText(n.Key)
			var vt reflect.Type
			switch t.Kind() {
			case reflect.Map:
				vt = t.Elem()
				if isInt(t.Key().Kind()) { // {1: 70, 2.9: 25} read 2.9 as 2
					if e := fractionAt(name, n.Key, path, "expected an integer key"); e != nil {
						return e
					}
				}
			case reflect.Struct:
				if f, ok := fieldByTag(t, key); ok {
					vt = f.Type
				}
			}
			if vt == nil {
				return nil // unknown or merged ("<<"): the decoder says what
			}
			p := key
			if path != "" {
				p = path + "." + key
			}
			return walk(n.Value, vt, p)
		}
		return nil
	}
	return walk(root, reflect.TypeFor[file](), "")
}

// priorityFractions is fractionsIntoInts of a type that reads itself and
// holds priorities, integers: a priority's weights ({1: 70, 2.9: 25} read
// 2.9 as 2), a priority alone (2.7 read as 2), and an SLA by priority
// ({1.5: 1m} replaced priority 1's). Other such types are not followed.
func priorityFractions(name string, n ast.Node, t reflect.Type, path string) *Error {
	prio := t == reflect.TypeFor[filePriority]()
	if !prio && t != reflect.TypeFor[fileSLA]() {
		return nil
	}
	fraction := func(n ast.Node, what string) *Error { return fractionAt(name, n, path, "expected an integer "+what) }
	var pairs []*ast.MappingValueNode
	switch n := unwrap(n).(type) {
	case *ast.FloatNode:
		if prio {
			return fraction(n, "priority")
		}
	case *ast.MappingNode:
		pairs = n.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{n}
	}
	for _, mv := range pairs {
		if e := fraction(mv.Key, "priority"); e != nil {
			return e
		}
		if prio {
			if e := fraction(mv.Value, "weight"); e != nil {
				return e
			}
		}
	}
	return nil
}

// fractionAt is the error at node n, at path, when it is a number with a
// fraction: want, then what it got.
func fractionAt(name string, n ast.Node, path, want string) *Error {
	f, ok := unwrap(n).(*ast.FloatNode)
	if !ok {
		return nil
	}
	tk := f.GetToken()
	if x, err := strconv.ParseFloat(tk.Value, 64); err != nil || x == math.Trunc(x) {
		return nil
	}
	return &Error{File: name, Line: tk.Position.Line, Column: tk.Position.Column, Path: path, Msg: fmt.Sprintf("%s, got %s", want, tk.Value)}
}

// selfReading is the interface of the file types that read themselves.
var selfReading = reflect.TypeFor[interface{ UnmarshalYAML(ast.Node) error }]()

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}
