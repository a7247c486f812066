"""JSON response bodies encoded by orjson: the same JSON content as Flask's encoder, faster.

Every search answer (hits, highlights, facet counts) is encoded, and orjson does it in a fraction
of the standard library's time. The API promises JSON *content*, not Flask's exact bytes, so
orjson's output is sent as it is: compact, keys in insertion order, non-ASCII text as raw
UTF-8 (RFC 8259) instead of `\\uXXXX` escapes, and floats in orjson's spelling (`0.00001`, `1e+16`
rather than `1e-05`, `1e16`); clients decode both to the same values. One difference in content:
orjson writes NaN and infinities as `null` where Flask writes the non-JSON tokens `NaN` and
`Infinity`; no response holds them.

What orjson refuses (integers beyond 64 bits, non-string keys, lone surrogates) is left to
Flask's encoder, as is indented output (debug mode, or `compact = False`). Its bodies are ASCII
with `\\uXXXX` escapes: the same content, spelled the standard library's way.
"""

from __future__ import annotations

from typing import Any, cast

import orjson
from flask.json.provider import DefaultJSONProvider
from werkzeug.sansio.response import Response

# Dataclasses and datetimes go through Flask's `default()`, which writes them its own way
# (`asdict`, HTTP dates) rather than orjson's (ISO 8601).
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


class JSONProvider(DefaultJSONProvider):
    """Flask's JSON provider with response bodies encoded by orjson."""

    # Keep keys in the documented order (records, facets, the understood query).
    sort_keys = False

    def response(self, *args: Any, **kwargs: Any) -> Response:
        indented = self.compact is False or (self.compact is None and self._app.debug)
        if indented:
            return super().response(*args, **kwargs)
        options = _OPTIONS | orjson.OPT_SORT_KEYS if self.sort_keys else _OPTIONS
        try:
            data = orjson.dumps(
                self._prepare_response_obj(args, kwargs), default=self.default, option=options
            )
        except orjson.JSONEncodeError:
            return super().response(*args, **kwargs)
        # The trailing newline as Flask writes it. `application/json` takes no charset
        # parameter: JSON is UTF-8 (RFC 8259), and Werkzeug adds none.
        response_class = cast(Any, self._app.response_class)  # typed as Werkzeug's base class
        return cast(Response, response_class(data + b"\n", mimetype=self.mimetype))
