"""The security headers of every answer, whoever makes it: the app (api/security.py), nginx's
error pages and gunicorn's own errors (serving/). Plain data, importable from anywhere.

Pages may run only the service's own scripts and styles (no inline script or style, so an
injected `<script>` or `onerror=` does nothing even if escaping ever failed), may not be framed
(clickjacking), and say not to guess content types; JSON and feeds get the same with nothing
allowed at all. Referrers leave the site as its origin only: search URLs carry what people
searched for.
"""

from __future__ import annotations

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Nothing in a JSON answer, a feed or a download may load or run anything.
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
# What the front (nginx's error pages) and gunicorn's own errors send with their JSON.
DATA_HEADERS = {**HEADERS, "Content-Security-Policy": DATA_POLICY}
