"""Private names of other people's code, found in the platform's source by its syntax tree.

Two kinds (``Use.kind``):

- ``attribute``: ``obj._name`` (and ``getattr/hasattr/delattr(obj, "_name")``, and
  ``from library import _name``) where ``_name`` is not ours. A name is ours when our
  own source binds it (``def``/``class``, an assignment, ``self._name = ...``,
  ``setattr(obj, "_name", ...)``, ``object.__setattr__(obj, "_name", ...)``,
  ``__slots__``). Inside a class with a library base,
  ``self._name``/``cls._name`` must be bound by that class or one of our bases: a name of
  the same spelling elsewhere in our code does not make a library's private attribute ours.
- ``meta key``: a ``request.meta`` key starting with ``_`` (``meta["_x"]``,
  ``meta.get/pop/setdefault("_x")``, ``"_x" in meta``, ``meta={"_x": ...}``,
  ``meta.update({"_x": ...})``), literal or through a module constant, unless our own
  code declares it as a ``*_META`` constant.

Dunder names are Python's, not private.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.source import parsed

REPO = Path(__file__).resolve().parents[2]
PLATFORM = ("core", "crawlers", "fingerprints", "orchestration", "indexing", "search")
# Every top-level package of the repository: an import from one of them is ours.
OURS = frozenset(p.name for p in REPO.iterdir() if (p / "__init__.py").exists())
ATTRIBUTE_READERS = frozenset({"getattr", "hasattr", "delattr"})
META_METHODS = frozenset({"get", "pop", "setdefault"})


@dataclass(frozen=True, order=True)
class Use:
    kind: str  # "attribute" | "meta key"
    name: str
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.where}: {self.kind} {self.name}"


def private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def platform_sources() -> dict[str, str]:
    return {
        str(path.relative_to(REPO)): path.read_text(encoding="utf-8")
        for root in PLATFORM
        for path in sorted((REPO / root).rglob("*.py"))
    }


def find_private_uses(sources: Mapping[str, str]) -> list[Use]:
    """Every private name of a library that ``sources`` (path -> text) use."""
    trees = {path: parsed(text, path) for path, text in sources.items()}
    scan = _Scan(trees)
    return sorted(use for path, tree in trees.items() for use in scan.uses(path, tree))


class _Scan:
    def __init__(self, trees: Mapping[str, ast.Module]) -> None:
        # Module-level string constants of every file, for keys and names given by name.
        self.constants: dict[str, set[str]] = {}
        for tree in trees.values():
            for node in tree.body:
                if isinstance(node, ast.Assign | ast.AnnAssign) and _string(node.value):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            value = node.value.value  # type: ignore[union-attr]
                            self.constants.setdefault(target.id, set()).add(value)
        self.own_meta = {
            value
            for name, values in self.constants.items()
            if name.endswith("_META")
            for value in values
        }
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self.class_cache: dict[int, set[str]] = {}
        self.own: set[str] = set()
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, []).append(node)
            self.own |= self.bound(tree)

    def names(self, node: ast.expr | None) -> set[str]:
        """The strings ``node`` stands for: a literal, or a module constant's values."""
        if _string(node):
            return {node.value}  # type: ignore[union-attr]
        if isinstance(node, ast.Name):
            return self.constants.get(node.id, set())
        return set()

    def bound(self, tree: ast.AST) -> set[str]:
        """The names ``tree`` binds (defines, assigns, sets as attributes)."""
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                found.add(node.attr)
            elif isinstance(node, ast.alias) and node.asname:
                found.add(node.asname)
            elif isinstance(node, ast.Call) and _called(node) == "setattr" and node.args[1:]:
                found |= self.names(node.args[1])
            elif isinstance(node, ast.Call) and _sets_through_object(node):
                found |= self.names(node.args[1])  # object.__setattr__(item, "_x", ...)
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
            ):
                found |= {e.value for e in ast.walk(node.value) if _string(e)}  # type: ignore[attr-defined]
        return found

    def class_bound(self, cls: ast.ClassDef, seen: frozenset[str] = frozenset()) -> set[str]:
        """What ``cls`` and its bases of our own bind (``seen``: no loop on a cycle)."""
        if id(cls) in self.class_cache:
            return self.class_cache[id(cls)]
        found = self.bound(cls)
        for base in cls.bases:
            name = _base_name(base)
            if name in seen:
                continue
            for ours in self.classes.get(name, ()):
                found |= self.class_bound(ours, seen | {cls.name})
        self.class_cache[id(cls)] = found
        return found

    def library_based(self, cls: ast.ClassDef) -> bool:
        for base in cls.bases:
            name = _base_name(base)
            if name in self.classes:
                if any(self.library_based(c) for c in self.classes[name] if c is not cls):
                    return True
            elif not hasattr(builtins, name):
                return True
        return False

    def uses(self, path: str, tree: ast.Module) -> Iterator[Use]:
        yield from self._visit(path, tree, None)

    def _visit(self, path: str, node: ast.AST, own_class: set[str] | None) -> Iterator[Use]:
        if isinstance(node, ast.ClassDef):
            own_class = self.class_bound(node) if self.library_based(node) else None
        yield from self._node(path, node, own_class)
        for child in ast.iter_child_nodes(node):
            yield from self._visit(path, child, own_class)

    def _node(self, path: str, node: ast.AST, own_class: set[str] | None) -> Iterator[Use]:
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in OURS:
            if node.level == 0:
                yield from _private_modules(node.module or "", where)
                for alias in node.names:
                    if private(alias.name):
                        yield Use("attribute", alias.name, where)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in OURS:
                    yield from _private_modules(alias.name, where)
        elif isinstance(node, ast.Attribute) and private(node.attr):
            if not isinstance(node.ctx, ast.Store) and not self._ours(node, own_class):
                yield Use("attribute", node.attr, where)
        elif isinstance(node, ast.Call):
            if _called(node) in ATTRIBUTE_READERS and node.args[1:]:
                for name in self.names(node.args[1]):
                    if private(name) and name not in self.own:
                        yield Use("attribute", name, where)
            for key in self._call_meta_keys(node):
                yield from self._meta(key, where)
        elif isinstance(node, ast.Subscript) and _is_meta(node.value):
            for key in self.names(node.slice):
                yield from self._meta(key, where)
        elif (
            isinstance(node, ast.Compare)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(_is_meta(c) for c in node.comparators)
        ):
            for key in self.names(node.left):
                yield from self._meta(key, where)

    def _ours(self, node: ast.Attribute, own_class: set[str] | None) -> bool:
        is_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        if is_self and own_class is not None:
            return node.attr in own_class
        return node.attr in self.own

    def _call_meta_keys(self, node: ast.Call) -> Iterator[str]:
        func = node.func
        if isinstance(func, ast.Attribute) and _is_meta(func.value):
            if func.attr in META_METHODS and node.args:
                yield from self.names(node.args[0])
            elif func.attr == "update":
                for arg in node.args:
                    yield from self._dict_keys(arg)
                yield from (k.arg for k in node.keywords if k.arg)
        for keyword in node.keywords:
            if keyword.arg == "meta":
                yield from self._dict_keys(keyword.value)

    def _dict_keys(self, node: ast.expr) -> Iterator[str]:
        if isinstance(node, ast.Dict):
            for key in node.keys:
                yield from self.names(key)

    def _meta(self, key: str, where: str) -> Iterator[Use]:
        if private(key) and key not in self.own_meta:
            yield Use("meta key", key, where)


def _string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _called(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else ""


def _sets_through_object(node: ast.Call) -> bool:
    """``object.__setattr__(obj, name, value)``: how frozen dataclasses get an attribute."""
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "__setattr__"
        and isinstance(func.value, ast.Name)
        and func.value.id == "object"
        and len(node.args) >= 2
    )


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):  # Generic[T], Protocol[...]
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_meta(node: ast.expr) -> bool:
    """``request.meta``, ``self.meta``, a variable ``meta`` or ``*_meta``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "meta"
    return isinstance(node, ast.Name) and (node.id == "meta" or node.id.endswith("_meta"))


def _private_modules(dotted: str, where: str) -> Iterator[Use]:
    """``library._module`` in an import path: a private module of the library (the first
    name is the package's own, public whatever its spelling)."""
    for part in dotted.split(".")[1:]:
        if private(part):
            yield Use("attribute", part, where)
