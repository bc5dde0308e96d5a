"""Prolific: the HTTP client (client.py) and its wire shapes (wire.py), the adapter, a study
per batch (studies.py), eligibility filters and the channel's policy."""
