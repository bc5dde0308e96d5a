"""The marketplaces: one package per channel (mturk/, prolific/, links/), the interface and
policy they implement (base.py), the session channels' shared adapter (sessions.py), and the
registry that maps a channel to its adapter and policy (registry.py)."""
