package runner

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadSeeds reads a seeds CSV (run-batch): a header row, then one seed per
// non-empty row, as a map from column name to value.
func ReadSeeds(r io.Reader) ([]map[string]string, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("seeds: empty file (a header row is required)")
	}
	if err != nil {
		return nil, fmt.Errorf("seeds: %w", err)
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" || seen[h] {
			return nil, fmt.Errorf("seeds: column %d of the header is empty or repeated (%q)", i+1, h)
		}
		seen[h] = true
		header[i] = h
	}
	var out []map[string]string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("seeds: %w", err)
		}
		empty := true
		row := make(map[string]string, len(header))
		for i, v := range rec {
			row[header[i]] = v
			if strings.TrimSpace(v) != "" {
				empty = false
			}
		}
		if !empty {
			out = append(out, row)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("seeds: no rows")
	}
	return out, nil
}
