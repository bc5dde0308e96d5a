"""Paid work at a marketplace: publishing batches, syncing what workers did, reviewing it,
expiring what is no longer wanted, and the ledger that books what it all costs."""
