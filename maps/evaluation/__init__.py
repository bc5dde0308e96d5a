"""The corpus's evaluation protocol for concept maps (Falke & Gurevych, EMNLP 2017, §7), pure.

`matching` (strict, unlabeled and concept match, as the corpus's jar), `rouge` (ROUGE-2 as
ROUGE-1.5.5 computes it), `meteor` (METEOR 1.5 where its jar is present) and `corpus` (gold
and system folders, per topic and macro averages).
"""
