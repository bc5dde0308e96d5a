"""The HIT page every channel uses (the ExternalQuestion protocol): its parameters,
tokens, answer parsing, headers, cached shells and views. Storing an answer is crowd's
(crowd/answers/)."""
