"""Load benchmark: simulated workers against gunicorn on PostgreSQL (run.py)."""
