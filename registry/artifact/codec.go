package artifact

import "github.com/agentenv/agentenv/internal/jsonobj"

// Each artifact type keeps the members it does not declare (Header.Extra),
// so a document written by another build reads and writes back whole.

func (f *File) UnmarshalJSON(b []byte) error {
	type plain File
	return jsonobj.Decode(b, (*plain)(f), &f.Extra)
}

func (f File) MarshalJSON() ([]byte, error) {
	type plain File
	return jsonobj.Encode(plain(f), f.Extra)
}

func (u *FileArtifactUniverse) UnmarshalJSON(b []byte) error {
	type plain FileArtifactUniverse
	return jsonobj.Decode(b, (*plain)(u), &u.Extra)
}

func (u FileArtifactUniverse) MarshalJSON() ([]byte, error) {
	type plain FileArtifactUniverse
	return jsonobj.Encode(plain(u), u.Extra)
}

func (e *Environment) UnmarshalJSON(b []byte) error {
	type plain Environment
	return jsonobj.Decode(b, (*plain)(e), &e.Extra)
}

func (e Environment) MarshalJSON() ([]byte, error) {
	type plain Environment
	return jsonobj.Encode(plain(e), e.Extra)
}

func (u *EnvironmentUniverse) UnmarshalJSON(b []byte) error {
	type plain EnvironmentUniverse
	return jsonobj.Decode(b, (*plain)(u), &u.Extra)
}

func (u EnvironmentUniverse) MarshalJSON() ([]byte, error) {
	type plain EnvironmentUniverse
	return jsonobj.Encode(plain(u), u.Extra)
}

func (di *DockerImage) UnmarshalJSON(b []byte) error {
	type plain DockerImage
	return jsonobj.Decode(b, (*plain)(di), &di.Extra)
}

func (di DockerImage) MarshalJSON() ([]byte, error) {
	type plain DockerImage
	return jsonobj.Encode(plain(di), di.Extra)
}

func (s *Skill) UnmarshalJSON(b []byte) error {
	type plain Skill
	return jsonobj.Decode(b, (*plain)(s), &s.Extra)
}

func (s Skill) MarshalJSON() ([]byte, error) {
	type plain Skill
	return jsonobj.Encode(plain(s), s.Extra)
}

func (c *CLI) UnmarshalJSON(b []byte) error {
	type plain CLI
	return jsonobj.Decode(b, (*plain)(c), &c.Extra)
}

func (c CLI) MarshalJSON() ([]byte, error) {
	type plain CLI
	return jsonobj.Encode(plain(c), c.Extra)
}

func (v *VMImage) UnmarshalJSON(b []byte) error {
	type plain VMImage
	return jsonobj.Decode(b, (*plain)(v), &v.Extra)
}

func (v VMImage) MarshalJSON() ([]byte, error) {
	type plain VMImage
	return jsonobj.Encode(plain(v), v.Extra)
}
