"""`manage.py export_ranking` on the command line: piped into a reader that stops early."""

import os
import sys

import pytest
from django.core.management import call_command

from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_a_reader_that_stops_early_ends_the_export_quietly(monkeypatch, capsys):
    campaign = CampaignFactory(slug="piped")
    PropositionFactory.create_batch(30, topic=TopicFactory(campaign=campaign))
    reader, writer = os.pipe()
    os.close(reader)  # `export_ranking ... | head -1` once head has its line
    stream = os.fdopen(writer, "w")
    monkeypatch.setattr(sys, "stdout", stream)

    call_command("export_ranking", campaign="piped")  # no BrokenPipeError

    stream.write("more\n")
    stream.close()  # the interpreter's own flush at exit: quiet too (stdout now goes to /dev/null)
    assert capsys.readouterr().err == ""
