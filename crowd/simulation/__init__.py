"""A simulated crowd for the demo and rehearsals: workers on the local MTurk endpoint
(hits) and participants in sessions (sessions), answering through the real pages."""
