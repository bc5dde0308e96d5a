"""Attacks on every boundary, over HTTP, against the production settings where they matter
(issue 15): each finding reproduced and shown to hold."""
