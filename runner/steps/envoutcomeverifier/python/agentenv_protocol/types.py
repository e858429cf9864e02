"""Wire types of the data plane (`/agentenv`): parts and the data/* answers, as small classes with the
attribute names and the `model_validate` / `model_dump` methods verifier code uses."""

from __future__ import annotations

PROTOCOL_VERSION = "1.0"
WELL_KNOWN_PATH = "/.well-known/agent-env.json"
RPC_PATH = "/agentenv"
MCP_TRANSPORT = "mcp"
MCP_PATH = "/mcp"
METHOD_RESET = "data/reset"
METHOD_ADD = "data/add"
METHOD_GET = "data/get"
ROLE_HEADER = "AgentEnv-Role"


class _Model:
    """Keyword construction, attribute access, equality and a JSON dump that drops None fields."""

    _fields: tuple = ()

    def __init__(self, **kw):
        for name in self._fields:
            setattr(self, name, kw.pop(name, getattr(type(self), name, None)))
        if kw:
            raise TypeError(f"{type(self).__name__}: unknown field(s) {', '.join(sorted(kw))}")

    def model_dump(self, mode: str = "python", exclude_none: bool = False) -> dict:
        out = {}
        for name in self._fields:
            value = getattr(self, name)
            if isinstance(value, _Model):
                value = value.model_dump(mode=mode, exclude_none=exclude_none)
            if value is None and exclude_none:
                continue
            out[name] = value
        return out

    def __eq__(self, other):
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.model_dump(exclude_none=True).items())
        return f"{type(self).__name__}({args})"


class FileWithBytes(_Model):
    _fields = ("bytes", "mimeType", "name")


class FileWithUri(_Model):
    _fields = ("uri", "mimeType", "name")


class TextPart(_Model):
    _fields = ("kind", "text", "metadata")
    kind = "text"


class FilePart(_Model):
    _fields = ("kind", "file", "metadata")
    kind = "file"


class DataPart(_Model):
    _fields = ("kind", "data", "metadata")
    kind = "data"


Part = (TextPart, FilePart, DataPart)


def part_from_dict(d: dict):
    """The part class for a wire part, by its `kind`; a ValueError for anything else."""
    if not isinstance(d, dict):
        raise ValueError(f"a part is an object, got {type(d).__name__}")
    kind = d.get("kind")
    meta = d.get("metadata")
    if kind == "text":
        return TextPart(text=d.get("text", ""), metadata=meta)
    if kind == "data":
        if not isinstance(d.get("data"), dict):
            raise ValueError("a data part's data is an object")
        return DataPart(data=d["data"], metadata=meta)
    if kind == "file":
        f = d.get("file") or {}
        cls = FileWithBytes if "bytes" in f else FileWithUri
        return FilePart(file=cls(**{k: f.get(k) for k in cls._fields}), metadata=meta)
    raise ValueError(f"unknown part kind {kind!r}")


def part_to_dict(p) -> dict:
    """A part (one of the classes above, or already a dict) as sent on the wire, without None fields."""
    if isinstance(p, dict):
        return {k: v for k, v in p.items() if v is not None}
    if isinstance(p, _Model):
        return p.model_dump(mode="json", exclude_none=True)
    dump = getattr(p, "model_dump", None)  # a pydantic part from the real package
    if dump is not None:
        return dump(mode="json", exclude_none=True)
    raise TypeError(f"a part is a TextPart, FilePart, DataPart or dict, got {type(p).__name__}")


class ResetDataResponse(_Model):
    @classmethod
    def model_validate(cls, d):
        return cls()


class AddDataResponse(_Model):
    @classmethod
    def model_validate(cls, d):
        return cls()


class GetDataResponse(_Model):
    _fields = ("parts",)

    @classmethod
    def model_validate(cls, d):
        if not isinstance(d, dict) or not isinstance(d.get("parts"), list):
            raise ValueError("data/get answered without a parts list")
        return cls(parts=[part_from_dict(p) for p in d["parts"]])

    def model_dump(self, mode: str = "python", exclude_none: bool = False) -> dict:
        return {"parts": [p.model_dump(mode=mode, exclude_none=exclude_none) for p in self.parts]}
