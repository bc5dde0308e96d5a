"""The Marketplace interface for participant links: a session channel with no remote at all
(crowd/marketplaces/sessions.py); approvals are bookkeeping only and no money moves."""

from crowd.marketplaces.sessions import SessionMarketplace


class LinksMarketplace(SessionMarketplace):
    channel = "links"
    label = "Participant links"
    hit_prefix = "L"
