package config

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

type storeTable struct {
	Impl   string         `toml:"impl"`
	Config map[string]any `toml:"config"`
}

// UnmarshalTOML accepts `document = "postgres"` and
// `[stores.document] impl = "postgres"` with a [stores.document.config]
// table (or an inline table). Unknown keys of the table are recorded as
// warnings.
func (s *StoreSpec) UnmarshalTOML(data []byte) error {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && (t[0] == '"' || t[0] == '\'') {
		var v struct {
			V string `toml:"v"`
		}
		if err := toml.Unmarshal(append([]byte("v = "), t...), &v); err != nil {
			return err
		}
		*s = StoreSpec{Impl: v.V, fromString: true}
		return nil
	}
	if len(t) > 0 && t[0] == '{' {
		t = append([]byte("v = "), t...)
		var v struct {
			V map[string]any `toml:"v"`
		}
		if err := toml.Unmarshal(t, &v); err != nil {
			return err
		}
		b, err := toml.Marshal(v.V)
		if err != nil {
			return err
		}
		t = b
	}
	var st storeTable
	err := toml.NewDecoder(bytes.NewReader(t)).DisallowUnknownFields().Decode(&st)
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) {
		for _, de := range sm.Errors {
			name := strings.Join(de.Key(), ".")
			w := Warning{Key: name, Message: "unknown key " + strconv.Quote(name) + " in a [stores.<kind>] table (want impl and config)"}
			w.Suggestion = suggest(name, []string{"impl", "config"})
			s.problems = append(s.problems, w)
		}
		st = storeTable{}
		err = toml.Unmarshal(t, &st)
	}
	if err != nil {
		return err
	}
	s.Impl, s.Config = st.Impl, st.Config
	return nil
}
