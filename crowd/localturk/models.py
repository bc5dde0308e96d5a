"""Tables of the local MTurk-compatible endpoint (its own, separate from the app's)."""
