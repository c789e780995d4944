"""A user's SQL filter over `documents` columns, checked to be read whole.

LanceDB's SQL parser stops at the end of the first complete expression and ignores what
follows (`doc_id = 'a.md' garbage` reads as `doc_id = 'a.md'`). `enclosed` hands it the
filter in parentheses, so the parser must meet the closing ')' right after the
expression: trailing text becomes a parse error. For that ')' to be ours the filter's
own parentheses must balance, which `enclosed` checks (outside quoted strings and
identifiers); what it cannot follow as the parser does (comments, prefixed or
dollar-quoted strings) is refused.
"""

from __future__ import annotations

from sproutrag.errors import QueryError

_QUOTES = "'\"`"
_HINT = "(a SQL filter over the documents table's columns)"


def _refuse(where: str, why: str) -> QueryError:
    return QueryError(f"where {where!r}: {why} {_HINT}")


def _closing(where: str, start: int) -> int:
    """The index of the quote closing the one at START (a doubled quote is one quote of
    the text); QueryError when it is not closed."""
    quote, at = where[start], start + 1
    while True:
        end = where.find(quote, at)
        if end < 0:
            raise _refuse(where, f"the quote {quote} at character {start} is not closed")
        if not where.startswith(quote * 2, end):
            return end
        at = end + 2


def _depth_change(where: str, at: int) -> int:
    """+1 for '(' at AT, -1 for ')', 0 otherwise; QueryError for a comment or a '$'."""
    if where.startswith(("--", "/*"), at):
        raise _refuse(where, f"comments are not supported (character {at})")
    if where[at] == "$":
        raise _refuse(where, f"'$' at character {at}: write strings in single quotes")
    return {"(": 1, ")": -1}.get(where[at], 0)


def enclosed(where: str) -> str:
    """`(WHERE)`: the filter as LanceDB must read it whole (module docstring).
    `QueryError` naming the filter when its parentheses do not balance or a quote is
    left open, or it holds a comment, a '$' or a prefixed string (E'..', N'..'), or
    when it is not a string or empty."""
    if not isinstance(where, str) or not where.strip():
        raise QueryError(f"where must be a non-empty string {_HINT}, got {where!r}")
    depth, at = 0, 0
    while at < len(where):
        if where[at] in _QUOTES:
            before = where[at - 1] if at else " "
            if before.isalnum() or before in "_&":
                raise _refuse(where, f"a prefixed string at character {at - 1}: write "
                              "strings as plain '...' (a ' inside doubled: '')")
            at = _closing(where, at) + 1
            continue
        depth += _depth_change(where, at)
        if depth < 0:
            raise _refuse(where, f"')' at character {at} closes no '(': the filter "
                          "must end where its expression ends")
        at += 1
    if depth:
        raise _refuse(where, f"{depth} '(' not closed")
    return f"({where})"
