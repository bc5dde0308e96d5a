"""Whether participants can reach SITE_URL, and whether an address is this machine only.

Every link and study URL Salience makes starts with SITE_URL. On a loopback SITE_URL
(127.0.0.1, ::1, localhost) those links open only on the server's own machine: right for a
rehearsal with `make serve`, useless to anyone else. Development warns (the Channel page, the
commands that print links); it never refuses, so rehearsals keep working.
"""

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def host_is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the names of this machine; False for anything else
    (0.0.0.0 and :: listen on every interface, so they are not loopback)."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def site_url_loopback_warning(site_url: str | None = None) -> str | None:
    """A sentence for the researcher when SITE_URL reaches only this machine, else None."""
    url = (site_url or settings.SITE_URL).rstrip("/")
    host = urlsplit(url).hostname or ""
    if not host_is_loopback(host):
        return None
    return (
        f"SITE_URL is {url}, an address of this machine only: links and study URLs made now open on this "
        "computer and nowhere else, so participants cannot reach them. That is right for a rehearsal; for a "
        "real study run the deployment (README: “From rehearsal to a real study”) with SITE_URL set to its "
        "public https:// address, and make the links there."
    )
