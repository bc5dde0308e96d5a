"""What config needs from the HIT page, handed in by the app that owns the page rather than
imported: config sits below every app, so the security middleware and the error views reach
the page's frame ancestors and its token digest through this hook, which `crowd.apps`
fills when the app is ready (`hit_page_register`).

* `hit_frame_ancestors`: who may frame a HIT page (settings.HIT_FRAME_ANCESTORS when set,
  else 'self' and the worker sites of every channel that shows the page in an iframe).
* `submit_token_digest`: a short name for a submit token the page signed for a task, what the
  rate limits count a worker's posts by (crowd.hit_page.tokens); None before registration,
  so a post is then counted by its address alone.
"""

from collections.abc import Callable
from uuid import UUID

from django.conf import settings

TokenDigest = Callable[..., str | None]

_worker_sites: tuple[str, ...] = ()
_token_digest: TokenDigest | None = None


def hit_page_register(*, worker_sites: tuple[str, ...], token_digest: TokenDigest) -> None:
    """Called once by crowd.apps.CrowdConfig.ready."""
    global _worker_sites, _token_digest
    _worker_sites = tuple(worker_sites)
    _token_digest = token_digest


def hit_frame_ancestors() -> tuple[str, ...]:
    return tuple(settings.HIT_FRAME_ANCESTORS) or ("'self'", *_worker_sites)


def submit_token_digest(*, token: str, task_uuid: UUID | str) -> str | None:
    return _token_digest(token=token, task_uuid=task_uuid) if _token_digest is not None else None
