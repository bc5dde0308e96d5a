"""Django's PostgreSQL backend with a cheaper connection health check, and prepared
statements for the queries every HIT request runs (prepared.py)."""
