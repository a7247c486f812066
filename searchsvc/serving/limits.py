"""The bounds of one HTTP request and the timeouts of a client, shared by the nginx front
(front.py, nginx.conf.template) and gunicorn (gunicorn_conf.py), so that the two agree.

A sync gunicorn worker gives its whole attention to one connection until the request is read
and answered: a client that sends slowly, or sends a huge request line (gunicorn's parser slows
faster than the line grows), holds a worker. nginx reads every request whole, within these
bounds and timeouts, before gunicorn sees it; gunicorn keeps the same bounds for when it is
reached directly.
"""

from __future__ import annotations

# The request line (method, path and query string, version): gunicorn's largest setting. A query
# too long for a URL goes in the body of POST /api/v1/search.
MAX_REQUEST_LINE = 8190
# nginx holds the request line and each header line in one of these buffers, and the whole
# header in all of them: a longer line is a 414 (request line) or 431 (header).
HEADER_BUFFER_KB = 8
HEADER_BUFFERS = 4
# gunicorn's own bound on a header line (its default), the same as nginx's buffer less CRLF.
MAX_HEADER_LINE = HEADER_BUFFER_KB * 1024 - 2
MAX_HEADER_FIELDS = 100

# Seconds a client has to send the whole request header, between two reads of the body, and to
# read each part of the answer; an idle keep-alive connection is closed after KEEPALIVE.
CLIENT_HEADER_TIMEOUT = 5
CLIENT_BODY_TIMEOUT = 5
SEND_TIMEOUT = 10
KEEPALIVE_TIMEOUT = 5
# After refusing a request whose body is still coming, nginx reads and drops it for at most
# this long (so that the client sees the answer rather than a reset), then closes.
LINGERING_TIME = 5

# How a long query is to be sent, said in every refusal of a long request line.
LONG_QUERY_HINT = "send a long query as POST /api/v1/search with a JSON body"

# Per client address, at the nginx front only (settings FRONT_CONNECTIONS_PER_ADDRESS and
# FRONT_REQUESTS_PER_SECOND, 0 for no limit): beyond the rate, a burst of twice the rate passes
# at once, and what exceeds either is a 429 to be tried again after RATE_RETRY_AFTER seconds.
# A slow client holds a connection within the timeouts above, but nginx has no deadline for a
# whole body (client_body_timeout is per read): one byte every few seconds keeps a body coming
# for as long as the client likes, and only the connections per address bound how many such
# clients one address has.
REQUEST_BURST_FACTOR = 2
RATE_RETRY_AFTER = 1
# A connection refused so (429) is closed after its client pauses this long (nginx drains other
# refusals for LINGERING_TIME, up to 2 s of silence): benchmarks/bench_trickle.py's attacker,
# replacing each refused connection at once, filled nginx's 4,096 connections with refusals
# still draining and made others' searches fail; with 100 ms none did.
REFUSED_LINGERING_MS = 100
# Shared memory for each per-address table: some 80,000 addresses (limit_req's states, 128
# bytes each, are the larger); when full, the least recently seen are forgotten.
ADDRESS_ZONE_MB = 10
