"""The margins chart of the suitability page: how many decided propositions fall in each band
of classifier margin, split by what became of them (kept, removed, verified). Returns the
bars for the template to draw as an SVG with a viewBox, so it scales to any width."""

from annotation.models import Campaign
from annotation.suitability.models import SuitabilityDecision

WIDTH, HEIGHT, BINS = 600, 200, 24


def margins_chart(*, campaign: Campaign) -> dict:
    rows = list(
        SuitabilityDecision.objects.filter(proposition__topic__campaign=campaign).values_list(
            "margin", "final_suitable", "verified_label"
        )
    )
    margins = [float(m) for m, _, _ in rows]
    low = min(margins)
    high = max(margins)
    span = (high - low) or 1.0
    counts = [[0, 0, 0] for _ in range(BINS)]  # kept, removed, verified
    for margin, suitable, verified in rows:
        index = min(BINS - 1, int((margin - low) / span * BINS))
        counts[index][2 if verified is not None else (0 if suitable else 1)] += 1
    tallest = max(sum(c) for c in counts) or 1
    plot = HEIGHT - 30
    bar = WIDTH / BINS
    bars = []
    for index, (kept, removed, verified_n) in enumerate(counts):
        y = float(plot)
        for kind, n in (("removed", removed), ("verified", verified_n), ("kept", kept)):
            h = n / tallest * (plot - 10)
            if n:
                bars.append(
                    {
                        "x": round(index * bar + 1, 1),
                        "y": round(y - h, 1),
                        "w": round(bar - 2, 1),
                        "h": round(h, 1),
                        "kind": kind,
                        "n": n,
                    }
                )
            y -= h
    zero = round((0 - low) / span * WIDTH, 1) if low < 0 < high else None
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "plot": plot,
        "bars": bars,
        "zero": zero,
        "low": round(low, 2),
        "high": round(high, 2),
        "tallest": tallest,
    }
