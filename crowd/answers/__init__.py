"""Answers as our HIT page receives them: what the page shows (content), who may answer
(access), and storing an answer once (store). The page itself is annotation/hit_page/views.py."""
