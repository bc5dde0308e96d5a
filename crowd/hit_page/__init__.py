"""The HIT page every channel uses (the ExternalQuestion protocol) and the storing of its
answers, one job in one package: parameters, tokens and headers (params, tokens, headers),
what the page shows (content, shells), who may answer (access), answer parsing (answers),
storing an answer once (store) and the views. config reaches the frame ancestors and the
token digest through config.hit_hooks, registered by crowd.apps."""
