"""Participant links: self-managed links to sessions on this server; nobody is paid."""
