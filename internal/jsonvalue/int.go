package jsonvalue

import "encoding/json"

// Int reads a whole number kept in a generic value: an int while a run is
// live, a float64 or json.Number after the value went through JSON. Any
// other value, or a number that is not one, is 0.
func Int(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}
