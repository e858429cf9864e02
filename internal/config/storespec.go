package config

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

type storeTable struct {
	Impl string `toml:"impl"`
	// Backend is another name for impl, the one the object store
	// documentation uses (`backend = "s3"`).
	Backend string         `toml:"backend"`
	Config  map[string]any `toml:"config"`
}

// UnmarshalTOML accepts `document = "postgres"` and
// `[stores.document] impl = "postgres"` with a [stores.document.config]
// table (or an inline table). backend is accepted for impl
// (`[stores.object] backend = "s3"`); giving both with different values
// is an error. Unknown keys of the table are recorded as warnings.
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
			w := Warning{Key: name, Message: "unknown key " + strconv.Quote(name) + " in a [stores.<kind>] table (want impl or backend, and config)"}
			w.Suggestion = suggest(name, []string{"impl", "backend", "config"})
			s.problems = append(s.problems, w)
		}
		st = storeTable{}
		err = toml.Unmarshal(t, &st)
	}
	if err != nil {
		return err
	}
	if st.Backend != "" {
		if st.Impl != "" && st.Impl != st.Backend {
			return fmt.Errorf("impl %q and backend %q disagree (backend is another name for impl: give one)", st.Impl, st.Backend)
		}
		st.Impl = st.Backend
	}
	s.Impl, s.Config = st.Impl, st.Config
	return nil
}
