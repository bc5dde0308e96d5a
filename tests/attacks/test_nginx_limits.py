"""N6 (issue 24): a 195 MB import, under the 200 MB IMPORT_MAX_BYTES, got a 504 from the shipped
nginx after 60 s, its default proxy timeout. The body limit and the timeouts of
`deploy/nginx.conf` (and of the one-host site, deploy/onehost/nginx-salience.conf) must agree with the settings: a file of IMPORT_MAX_BYTES and the form around
it fit under `client_max_body_size`, and nginx waits IMPORT_PROXY_SECONDS for the app's answer.
"""

import re
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.attacks

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# docker-compose's nginx and the one-host site (deploy/onehost/).
CONFS = {"compose": DEPLOY / "nginx.conf", "onehost": DEPLOY / "onehost" / "nginx-salience.conf"}
FORM_ROOM = 1024 * 1024  # the multipart form around the file: its boundaries and other fields
# What an import of IMPORT_MAX_BYTES may take behind nginx: the check of every line and the
# insert, with room for a loaded 2-core machine.
IMPORT_PROXY_SECONDS = 600
UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def _directive(conf: Path, name: str) -> str:
    found = re.findall(rf"^\s*{name}\s+([^;]+);", conf.read_text(), flags=re.MULTILINE)
    assert len(found) == 1, f"{name} is set {len(found)} times in {conf}"
    return found[0].strip()


def _size(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmg]?)", value.lower()).groups()
    return int(number) * UNITS[unit]


def _seconds(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([smh]?)", value.lower()).groups()
    return int(number) * SECONDS[unit]


@pytest.mark.parametrize("conf", CONFS.values(), ids=CONFS.keys())
def test_the_body_limit_takes_a_file_of_import_max_bytes_with_its_form(conf):
    assert _size(_directive(conf, "client_max_body_size")) >= settings.IMPORT_MAX_BYTES + FORM_ROOM


@pytest.mark.parametrize("conf", CONFS.values(), ids=CONFS.keys())
@pytest.mark.parametrize("name", ["proxy_read_timeout", "proxy_send_timeout"])
def test_nginx_waits_for_an_import_of_import_max_bytes(conf, name):
    assert _seconds(_directive(conf, name)) >= IMPORT_PROXY_SECONDS
