"""A server's schema (describe_schema's JSON, docs/codec.md "Checking a change") as methods
that can be called without declarations: each type in canonical text is parsed into a `Type`
tree, which carries the annotation the codec is built from (structs become dataclasses with
fields f0, f1, ... as corvid-stubgen names them), and each function becomes a `Remote`."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Optional, Union

from . import _types
from ._codec import Codec, codec_for
from ._frame import fingerprint, fnv1a32
from ._remote import Remote, Resolved, remote_from
from .stubgen import SchemaError, TypeScanner, py_name

_SCALARS = {
    "i8": _types.i8,
    "u8": _types.u8,
    "i16": _types.i16,
    "u16": _types.u16,
    "i32": _types.i32,
    "u32": _types.u32,
    "i64": _types.i64,
    "u64": _types.u64,
    "f32": _types.f32,
    "f64": _types.f64,
}


@dataclasses.dataclass(frozen=True)
class _Pos:
    i: int


def _keep(ann: Any, i: int) -> Any:
    """`ann` wrapped so that typing.Union neither merges alternatives that are the same type
    (`<i32|i32>`) nor flattens a nested optional or variant into its parent."""
    return _of(Annotated, ann, _Pos(i))


def _of(form: Any, *args: Any) -> Any:
    """`form[args]` for annotations made at run time (list[T], Optional[T], ...)."""
    return form[args if len(args) > 1 else args[0]]


@dataclasses.dataclass(eq=False)
class Type:
    """One type of the schema. kind: bool, int, float (name: i8 ... f64), bytes, unit (`()`),
    void, list, array (size), map, set, optional, variant, tuple, struct (name, frozen; args:
    the fields), enum (name; args: the underlying type), stream. `ann`: its annotation."""

    kind: str
    text: str
    ann: Any
    args: tuple[Type, ...] = ()
    name: str = ""
    size: int = 0
    frozen: bool = False


@dataclasses.dataclass(eq=False)
class Method:
    name: str
    signature: int
    params: list[Type]  # as the schema lists them (a client stream last)
    result: Type
    remote: Remote[..., Any]

    @property
    def args(self) -> list[Type]:
        """The parameters given as arguments (not a client stream's items)."""
        return [p for p in self.params if p.kind != "stream"]

    @property
    def in_stream(self) -> Type | None:
        return self.params[-1].args[0] if self.params and self.params[-1].kind == "stream" else None

    @property
    def out_stream(self) -> Type | None:
        return self.result.args[0] if self.result.kind == "stream" else None


class _Parser(TypeScanner[Type]):
    """Canonical type text -> Type. Struct names are looked up in the schema's struct list."""

    def __init__(self, schema: Schema, text: str) -> None:
        super().__init__(text)
        self.schema = schema

    def one(self) -> Type:
        start = self.i
        t = self.body()
        t.text = self.s[start : self.i]
        return t

    def body(self) -> Type:
        if self.eat("stream "):
            item = self.type()
            return Type("stream", "", _of(_types.Stream, item.ann), (item,))
        if self.eat("struct "):
            return self.schema.struct(self.name(",|)}>]:;{"))
        if self.eat("frozen "):
            n = self.name("{")
            self.expect("{")
            return self.schema.frozen(n, self.list_of("}", ","))
        if self.eat("enum "):
            n = self.name(":")
            self.expect(":")
            under = self.type()
            if under.kind != "int":
                raise self.fail("an enum's underlying type is an integer")
            return self.schema.enum(n, under)
        if self.eat("bytes"):
            return Type("bytes", "", bytes)
        if self.eat("void"):
            return Type("void", "", None)
        if self.eat("bool"):
            return Type("bool", "", bool)
        for name, scalar in _SCALARS.items():
            if self.eat(name):
                return Type("float" if name[0] == "f" else "int", "", scalar, name=name)
        if self.eat("?"):
            inner = self.type()
            return Type("optional", "", _of(Optional, _keep(inner.ann, 0)), (inner,))
        if self.eat("["):
            elem = self.type()
            if self.eat(";"):
                n = self.name("]")
                self.expect("]")
                if not n.isdigit():
                    raise self.fail("an array's size is a number")
                ann = _of(Annotated, _of(list, elem.ann), _types.Fixed(int(n)))
                return Type("array", "", ann, (elem,), size=int(n))
            self.expect("]")
            return Type("list", "", _of(list, elem.ann), (elem,))
        if self.eat("{"):
            key = self.type()
            if self.eat(":"):
                v = self.type()
                self.expect("}")
                return Type("map", "", _of(dict, key.ann, v.ann), (key, v))
            self.expect("}")
            return Type("set", "", _of(set, key.ann), (key,))
        if self.eat("<"):
            alts = self.list_of(">", "|")
            if not alts:
                raise self.fail("a variant has alternatives")
            anns = tuple(_keep(a.ann, i) for i, a in enumerate(alts))
            return Type("variant", "", _of(Union, *anns), tuple(alts))
        if self.eat("("):
            elems = self.list_of(")", ",")
            if not elems:
                return Type("unit", "", _types.Monostate)
            return Type("tuple", "", _of(tuple, *(e.ann for e in elems)), tuple(elems))
        raise self.fail("unknown type")


class Schema:
    """describe_schema's JSON: `methods` by name; types are parsed (and their codecs made)
    when the schema is read, so a bad one fails before anything is sent."""

    def __init__(self, doc: Any) -> None:
        if not isinstance(doc, dict) or doc.get("corvid_schema") != 1:
            raise SchemaError('not a corvid schema (no "corvid_schema": 1)')
        self._layouts: dict[str, tuple[str, list[Any]]] = {}
        self._structs: dict[str, Type] = {}
        self._building: set[str] = set()
        self._enums: dict[str, Type] = {}
        self.methods: dict[str, Method] = {}
        try:
            for st in doc.get("structs", []):
                if st["layout"] not in ("frozen", "evolvable"):
                    raise SchemaError(f"struct {st['name']}: unknown layout {st['layout']!r}")
                self._layouts[st["name"]] = (st["layout"], list(st["fields"]))
            for fn in doc.get("functions", []):
                m = self._method(fn["name"], fn["signature"], fn["params"], fn["result"])
                self.methods[m.name] = m
        except (KeyError, TypeError) as e:
            raise SchemaError(f"malformed schema: {type(e).__name__} {e}") from None

    def parse(self, text: Any) -> Type:
        if not isinstance(text, str):
            raise SchemaError(f"a type is not a string: {text!r}")
        return _Parser(self, text).parse()

    def _method(self, name: str, sig: str, params: list[Any], result: Any) -> Method:
        ps = [self.parse(p) for p in params]
        r = self.parse(result)
        if any(p.kind == "stream" for p in ps[:-1]):
            raise SchemaError(f"function {name}: only the last parameter may be a stream")
        canon = "(" + ",".join(p.text for p in ps) + ")->" + r.text
        try:
            stated = int(sig, 16)
        except (TypeError, ValueError):
            raise SchemaError(f"function {name}: signature {sig!r} is not hex") from None
        if fingerprint(canon) != stated:
            raise SchemaError(
                f"function {name}: the schema's fingerprint {sig} is not that of {canon}"
            )
        args = [codec_for(p.ann) for p in ps if p.kind != "stream"]
        parts = [c.canonical for c in args]
        in_item = codec_for(ps[-1].args[0].ann) if ps and ps[-1].kind == "stream" else None
        if in_item is not None:
            parts.append("stream " + in_item.canonical)
        out_item = codec_for(r.args[0].ann) if r.kind == "stream" else None
        res: Codec | None = None if r.kind in ("stream", "void") else codec_for(r.ann)
        if out_item is not None:
            got_r = "stream " + out_item.canonical
        else:
            got_r = "void" if res is None else res.canonical
        got = "(" + ",".join(parts) + ")->" + got_r
        if got != canon:  # the codecs made from the types must spell them the same
            raise SchemaError(f"function {name}: {canon} was read as {got}")
        resolved = Resolved(name, fnv1a32(name), canon, stated, args, res, out_item, in_item)
        return Method(name, stated, ps, r, remote_from(resolved))

    def struct(self, name: str) -> Type:
        t = self._structs.get(name)
        if t is not None:
            return t
        if name not in self._layouts:
            raise SchemaError(f"struct {name} is not in the schema's structs")
        if name in self._building:
            raise SchemaError(f"struct {name} is recursive")
        layout, fields = self._layouts[name]
        if layout != "evolvable":
            raise SchemaError(f"struct {name} is {layout}, but named as an evolvable struct")
        self._building.add(name)
        try:
            t = self._make(name, [self.parse(f) for f in fields], False)
        finally:
            self._building.discard(name)
        self._structs[name] = t
        return t

    def frozen(self, name: str, fields: list[Type]) -> Type:
        t = self._structs.get(name)
        if t is None:
            t = self._structs[name] = self._make(name, fields, True)
        elif [f.text for f in t.args] != [f.text for f in fields]:
            raise SchemaError(f"frozen struct {name} is spelled with two field lists")
        return t

    def _make(self, name: str, fields: list[Type], frozen: bool) -> Type:
        cls = dataclasses.make_dataclass(
            py_name(name), [(f"f{i}", f.ann) for i, f in enumerate(fields)], frozen=True
        )
        _types.struct(name=name, frozen=frozen)(cls)
        return Type("struct", "", cls, tuple(fields), name=name, frozen=frozen)

    def enum(self, name: str, under: Type) -> Type:
        t = self._enums.get(name)
        if t is None:
            # Enumerators are not in the schema: values arrive as ints (an open enum).
            cls = enum.IntEnum(py_name(name), [])  # type: ignore[misc]
            _types.enum_type(name=name, underlying=under.ann)(cls)
            t = self._enums[name] = Type("enum", "", cls, (under,), name=name)
        return t
