"""The client's address: the one thing the submission rate limit (config/security.py) and the
login throttle (config/login_throttle.py) count per address, read here and nowhere else.

X-Forwarded-For is a list any client may start: each proxy on the way appends the address it
was connected from. Only the entries our own proxies appended are true, and they are the
rightmost ones. With TRUSTED_PROXY_HOPS = N reverse proxies of ours in front of gunicorn, the
client is the N-th entry from the right (the one the outermost proxy appended); everything
left of it is whatever the client sent, and ignored. With 0 (the default) the header is
ignored and the client is REMOTE_ADDR, the TCP peer, which nobody can forge. A request
carrying fewer entries than N did not come through every proxy (say a healthcheck that reached
gunicorn directly): it counts as its TCP peer too, never as an entry nobody vouches for. An
entry that is not an IP address (a proxy misconfigured to pass something else) is treated the
same way.
"""

import ipaddress

from django.conf import settings
from django.http import HttpRequest
from rest_framework.request import Request


def client_address(request: HttpRequest | Request) -> str:
    """The address of whoever sent `request`, as TRUSTED_PROXY_HOPS says to read it (a DRF
    Request passes for its HttpRequest: it proxies META)."""
    return address_from_forwarded(
        forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR", ""),
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        hops=settings.TRUSTED_PROXY_HOPS,
    )


def address_from_forwarded(*, forwarded_for: str, remote_addr: str, hops: int) -> str:
    """The N-th address from the right of `forwarded_for` for N = `hops`; `remote_addr` when
    `hops` is 0, when there are fewer than `hops` entries, or when that entry is no address."""
    if hops <= 0:
        return remote_addr
    entries = [entry.strip() for entry in forwarded_for.split(",")]
    if len(entries) < hops or not forwarded_for.strip():
        return remote_addr
    candidate = entries[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote_addr
