"""Suitability filtering before the crowd (Falke & Gurevych 2017, §5.3): an expert-labelled
sample, a linear classifier, a verification queue ordered by uncertainty, and the filter the
Likert round respects. `features`, `classifier`, `agreement` and `verification` are pure (no
Django); the rest are services, selectors and interfaces."""
