"""What adding a channel touches, held by the layout (README "Where a channel lives"): every
channel has its leaf package under crowd/marketplaces/ listed in that registry; every living
channel with a lifecycle has its package under crowd/channels/ listed in LIFECYCLES, whose
participants' entry points are mounted under /s/; and nothing outside those packages, their
registries, the researcher's console and the rehearsal endpoints names a channel's package."""

import ast
from pathlib import Path

from django.urls import reverse

from annotation.models import Campaign
from crowd.channels.registry import LIFECYCLES
from crowd.marketplaces.registry import MARKETPLACES, POLICIES

ROOT = Path(__file__).resolve().parents[3]
CHANNELS = set(Campaign.Channel.values)
# Who may import a channel's own package besides the package itself: the two registries, the
# channel settings every channel shares, the console's pages, API and commands (they show and
# set a channel's own settings), the demo (it drives each channel as a researcher would) and
# the stand-in endpoints.
ALLOWED = (
    "crowd/marketplaces/registry.py",
    "crowd/channels/",
    "dashboard/",
    "rehearsal/",
    "ranking/management/commands/",
    "ranking/demo.py",
    "ranking/channel_demo.py",
)


def test_every_channel_has_a_leaf_package_in_the_registry():
    assert set(MARKETPLACES) == CHANNELS == set(POLICIES)
    for channel in CHANNELS:
        assert (ROOT / "crowd" / "marketplaces" / channel / "policy.py").exists()


def test_every_lifecycle_is_a_package_of_its_own_mounted_under_s():
    for lifecycle in LIFECYCLES:
        assert lifecycle.channel in CHANNELS
        assert (ROOT / "crowd" / "channels" / lifecycle.channel / "__init__.py").exists()
        assert lifecycle.urls == f"crowd.channels.{lifecycle.channel}.urls"
    assert reverse("sessions:prolific") == "/s/prolific/"
    assert reverse("sessions:link", args=["abc"]) == "/s/l/abc/"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_a_channels_package_is_named_only_by_its_registries_and_interfaces():
    owned = []
    for package in ("annotation", "crowd", "ranking", "dashboard", "config"):
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if "migrations" in path.parts or relative.startswith(ALLOWED):
                continue
            for channel in CHANNELS:
                own = (f"crowd/marketplaces/{channel}/", f"crowd/channels/{channel}/")
                if relative.startswith(own):
                    continue
                for name in _imports(path):
                    if name.startswith((f"crowd.marketplaces.{channel}", f"crowd.channels.{channel}")):
                        owned.append(f"{relative} imports {name}")
    assert owned == []
