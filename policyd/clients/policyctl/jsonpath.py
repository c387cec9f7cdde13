"""kubectl's JSONPath templates (``-o jsonpath='{.runtimes[*].name}'``): text with ``{…}``
expressions, ``{"\\n"}`` literals and ``{range …}…{end}`` loops. The expressions themselves are
evaluated by jsonpath-ng (its extended parser, for filters such as ``[?(@.selectable==true)]``);
only the template around them is kubectl's and lives here."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jsonpath_ng import Child, Fields
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext.parser import parse


class TemplateError(ValueError):
    pass


class _NotFound(Exception):
    """A field none of the values before it has (kubectl: ``foo is not found``)."""

    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


@dataclass(frozen=True)
class _Range:
    path: Path
    body: list[Any]  # of str (literal text), _Expr, _Range


@dataclass(frozen=True)
class _Expr:
    expression: str


_TOKEN = re.compile(r"\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}")


def _tokens(template: str) -> list[Any]:
    out: list[Any] = []
    pos = 0
    for match in _TOKEN.finditer(template):
        if match.start() > pos:
            out.append(template[pos : match.start()])
        out.append(_Expr(match.group(1).strip()))
        pos = match.end()
    rest = template[pos:]
    if "{" in rest or "}" in rest:
        raise TemplateError(f"unclosed action in template {template!r}")
    if rest:
        out.append(rest)
    return out


def _tree(tokens: list[Any], template: str) -> list[Any]:
    stack: list[tuple[str, list[Any]]] = [("", [])]
    for token in tokens:
        if isinstance(token, _Expr) and token.expression.startswith("range "):
            stack.append((token.expression.removeprefix("range ").strip(), []))
        elif isinstance(token, _Expr) and token.expression == "end":
            if len(stack) == 1:
                raise TemplateError(f"{{end}} without {{range}} in {template!r}")
            expression, body = stack.pop()
            stack[-1][1].append(_Range(Path(expression), body))
        elif isinstance(token, _Expr) and not token.expression.startswith('"'):
            stack[-1][1].append(Path(token.expression))
        else:
            stack[-1][1].append(token)
    if len(stack) != 1:
        raise TemplateError(f"{{range}} without {{end}} in {template!r}")
    return stack[0][1]


class Path:
    """One expression (``.a.b``, or ``{.a.b}`` as custom-columns write it), parsed once: a table
    applies it to every row."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        text = expression.strip().removeprefix("{").removesuffix("}").strip()
        if text.startswith("."):
            text = "$" + text
        elif text in ("", "@"):
            text = "$"
        try:
            self._parsed = parse(text)
        except (JsonPathLexerError, JsonPathParserError, Exception) as err:
            raise TemplateError(f"bad JSONPath {expression!r}: {err}") from None

    def values(self, data: Any) -> list[Any]:
        """What it finds in ``data``: nothing for a field ``data`` lacks, which kubectl's
        custom-columns print as ``<none>``."""
        try:
            return [match.value for match in self._parsed.find(data)]
        except TypeError:  # a filter comparing values of different types
            return []

    def found(self, data: Any) -> list[Any]:
        """As ``values``, but a field none of the values before it has is an error (a template's)."""
        found = [match.value for match in self._parsed.find(data)]
        if not found:
            field = _missing(self._parsed, data)
            if field is not None:
                raise _NotFound(field)
        return found


def _missing(path: Any, data: Any) -> str | None:
    """The field that makes ``path`` find nothing in ``data``, as kubectl finds it: one that none
    of the values before it has. An empty list or a filter that keeps nothing is no error."""
    if not isinstance(path, Child):
        return None
    before = path.left.find(data)
    if not before:
        return _missing(path.left, data)
    right = path.right
    if isinstance(right, Fields) and "*" not in right.fields and not any(right.find(m) for m in before):
        return ",".join(right.fields)
    return None


def text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _render(nodes: list[Any], data: Any) -> str:
    out = []
    for node in nodes:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, _Range):
            for item in node.path.found(data):
                out.append(_render(node.body, item))
        elif isinstance(node, Path):
            out.append(" ".join(text(v) for v in node.found(data)))
        else:
            out.append(json.loads(node.expression))  # a literal, e.g. {"\n"}
    return "".join(out)


def render(template: str, data: Any) -> str:
    """``template`` applied to ``data``; a template without braces is one expression, as kubectl takes it."""
    if "{" not in template:
        template = "{" + template + "}"
    try:
        return _render(_tree(_tokens(template), template), data)
    except _NotFound as err:  # kubectl's words, less its debugging dump of the whole object
        raise TemplateError(
            f'error executing jsonpath "{template}": Error executing template: {err.field} is not found.'
        ) from None
