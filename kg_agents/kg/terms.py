"""The one place where terms become SPARQL / N-Triples text.

Untrusted text (questions, LLM output, tool arguments, entity names) reaches a query only through
:func:`iri` and :func:`literal`: IRIs are validated against the ``IRIREF`` grammar of SPARQL 1.1 and
N-Triples (no spaces, controls, ``<>"{}|^`\\``), literals are escaped so nothing can close the
string. Text that cannot be encoded as UTF-8 (lone surrogates) raises :class:`InvalidTermError`.
"""

from __future__ import annotations

import re

from kg_agents.errors import InvalidTermError

__all__ = ["iri", "is_valid_iri", "literal"]

# IRIREF ::= '<' ([^<>"{}|^`\]-[#x00-#x20])* '>'
_IRI_BAD = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def _check_encodable(value: str, what: str) -> None:
    if not isinstance(value, str):
        raise InvalidTermError(f"{what} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTermError(f"{what} is not valid Unicode text: {value[:60]!r}") from exc


def is_valid_iri(value: str) -> bool:
    """True when ``value`` is an absolute IRI that can be written as ``<value>`` safely.

    Beyond the ``IRIREF`` grammar, the IRI must parse as RFC 3987 (checked by Oxigraph's IRI
    parser): servers reject e.g. ``DEL``, C1 controls or bad ``%`` escapes, and such a term must be
    refused here rather than become a query error at the endpoint.
    """
    if not isinstance(value, str) or not value or len(value) > 8192:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    if not _SCHEME.match(value) or _IRI_BAD.search(value):
        return False
    import pyoxigraph

    try:
        pyoxigraph.NamedNode(value)
    except ValueError:
        return False
    return True


def iri(value: str) -> str:
    """Render ``value`` as ``<value>``; raise :class:`InvalidTermError` unless it is a safe absolute IRI."""
    _check_encodable(value, "IRI")
    if not is_valid_iri(value):
        raise InvalidTermError(f"not a valid absolute IRI: {value[:80]!r}")
    return f"<{value}>"


_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}
_LIT_BAD = re.compile(r'[\\"\n\r\t\b\f\x00-\x1f\x7f]')


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def literal(value: str, *, lang: str | None = None, datatype: str | None = None) -> str:
    """Render ``value`` as a quoted, escaped literal, optionally ``@lang`` or ``^^<datatype>``."""
    _check_encodable(value, "literal")
    body = '"' + _LIT_BAD.sub(_escape_char, value) + '"'
    if lang is not None:
        if not re.fullmatch(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*", lang):
            raise InvalidTermError(f"not a language tag: {lang!r}")
        return body + "@" + lang
    if datatype is not None:
        return body + "^^" + iri(datatype)
    return body
