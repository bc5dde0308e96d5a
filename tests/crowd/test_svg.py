"""Server-side SVG charts (crowd.qc.svg): well-formed, accessible, escaped."""

import math
import xml.etree.ElementTree as ET

from crowd.qc.svg import (
    LEFT,
    NARROW,
    TOP,
    WIDE,
    binned_histogram_svg,
    chart_sizes,
    histogram_svg,
    interval_svg,
    line_svg,
)

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_histogram_counts_bins_and_draws_the_cutoff():
    svg = histogram_svg(
        [-0.9, 0.1, 0.15, 0.8, None, math.nan],
        bins=4,
        value_range=(-1, 1),
        cutoff=-0.5,
        cutoff_label="excluded up to",
        title="LOO r <per worker>",
        x_label="r",
    )
    root = parse(svg)
    assert root.get("role") == "img"
    assert root.get("aria-label").startswith(
        "LOO r <per worker>. 4 values in 4 bins from -1 to 1; excluded up to -0.50"
    )
    assert root.find(f"{SVG}title").text == "LOO r <per worker>"
    bars = [rect.find(f"{SVG}title").text for rect in root.iter(f"{SVG}rect")]
    assert bars == ["-1 to -0.5: 1", "0 to 0.5: 2", "0.5 to 1: 1"]
    assert "excluded up to -0.50" in svg


def test_a_histogram_from_stored_counts_is_the_same_chart():
    labels = {"cutoff": -0.5, "cutoff_label": "excluded up to", "title": "LOO r", "x_label": "r"}
    from_values = histogram_svg([-0.9, 0.1, 0.15, 0.8], bins=4, value_range=(-1, 1), **labels)
    assert binned_histogram_svg([1, 0, 2, 1], value_range=(-1, 1), **labels) == from_values
    assert "no data yet" in binned_histogram_svg([0] * 20, value_range=(-1, 1), title="t", x_label="x")


def test_line_with_error_bars_skips_undefined_points():
    svg = line_svg(
        {"mean ρ": [(1, 0.5, 0.1), (2, 0.8, 0.05), (3, math.nan, math.nan)]},
        title="Stability",
        x_label="labels per item",
        y_label="ρ",
        y_range=(0, 1),
        references={"paper 0.8": 0.8},
    )
    root = parse(svg)
    points = [circle.find(f"{SVG}title").text for circle in root.iter(f"{SVG}circle")]
    assert points == ["(1, 0.5 ± 0.1)", "(2, 0.8 ± 0.05)"]
    assert len(list(root.iter(f"{SVG}polyline"))) == 1
    assert "paper 0.8" in svg and root.find(f"{SVG}desc").text == "mean ρ: (1, 0.5 ± 0.1), (2, 0.8 ± 0.05)"


def test_several_series_get_a_legend_and_empty_charts_say_so():
    svg = line_svg({"a": [(0, 1), (1, 2)], "b & c": [(0, 2), (1, 1)]}, title="t", x_label="x", y_label="y")
    assert "b &amp; c" in svg and len(list(parse(svg).iter(f"{SVG}polyline"))) == 2
    assert "no data yet" in histogram_svg([], title="t", x_label="x")
    assert "no data yet" in line_svg({"a": []}, title="t", x_label="x", y_label="y")


def test_intervals_are_unjoined_bars_with_named_points():
    svg = interval_svg(
        [(1, 30.0, 1.5, "#1 loans <need> no credit"), (2, 28.0, 2.0, "#2 b"), (3, math.nan, 1.0, "#3 c")],
        title="μ ± σ",
        x_label="rank",
        y_label="μ",
    )
    root = parse(svg)
    names = [group.find(f"{SVG}title").text for group in root.iter(f"{SVG}g")]
    assert names == ["#1 loans <need> no credit: 30 ± 1.5", "#2 b: 28 ± 2"]
    assert len(list(root.iter(f"{SVG}circle"))) == 2 and not list(root.iter(f"{SVG}polyline"))
    assert root.find(f"{SVG}desc").text == "2 intervals; centres from 28 to 30, half-widths from 1.5 to 2"
    assert "no data yet" in interval_svg([], title="t", x_label="x", y_label="y")


def test_the_highest_interval_ends_under_the_tick_above_it():
    svg = interval_svg([(1, 31.27, 5.43, "#1 a"), (2, 14.71, 5.53, "#2 b")], title="t", x_label="rank", y_label="μ")
    root = parse(svg)
    bar_tops = [
        float(path.get("d").split("V")[1]) for path in root.iter(f"{SVG}path") if path.get("stroke") == "#2456a6"
    ]
    tick_labels = [text.text for text in root.iter(f"{SVG}text")]
    assert min(bar_tops) > TOP + 10  # 36.7 on an axis up to 40
    assert "40" in tick_labels and "0" in tick_labels  # the axis runs from tick to tick around the bars


def test_the_tallest_bar_ends_under_the_whole_tick_above_it():
    for counts, ticks in (
        ([1, 6, 2], ["0", "2", "4", "6", "8"]),
        ([10, 3], ["0", "5", "10", "15"]),
        ([1], ["0", "1", "2"]),
    ):
        root = parse(binned_histogram_svg(counts, value_range=(-1, 1), title="t", x_label="r", box=NARROW))
        y_ticks = [text for text in root.iter(f"{SVG}text") if text.get("x") == str(LEFT - 8)]
        bar_tops = [float(rect.get("y")) for rect in root.iter(f"{SVG}rect")]
        assert [text.text for text in y_ticks] == ticks, counts  # whole numbers of workers
        assert float(y_ticks[-1].get("y")) == TOP + 4  # the axis ends on its highest tick
        assert min(bar_tops) > TOP + 10, counts  # a quarter of the plot or more above the tallest bar


def test_the_cutoffs_label_is_on_the_side_with_room():
    def label(cutoff: float) -> tuple[str, float]:
        root = parse(
            binned_histogram_svg([1, 1], value_range=(-1, 1), cutoff=cutoff, title="t", x_label="r", box=NARROW)
        )
        line = next(path for path in root.iter(f"{SVG}path") if path.get("class") == "chart-marker")
        line_x = float(line.get("d")[1:].split(",")[0])
        text = next(text for text in root.iter(f"{SVG}text") if text.get("fill") == "#b42318")
        return text.get("text-anchor"), round(float(text.get("x")) - line_x, 1)

    assert label(-0.5) == ("start", 4)  # reads rightwards from the line
    assert label(0.3) == ("end", -4)  # ends left of the line, inside the box


def test_a_chart_is_drawn_for_a_wide_and_a_narrow_figure():
    svg = chart_sizes(lambda box: line_svg({"a": [(0, 1), (1, 2)]}, title="t", x_label="x", y_label="y", box=box))
    wide, narrow = parse(svg)
    assert parse(svg).get("class") == "chart-sizes"
    assert (wide.get("class"), wide.get("viewBox")) == ("chart chart-wide", f"0 0 {WIDE.width} {WIDE.height}")
    assert (narrow.get("class"), narrow.get("viewBox")) == ("chart chart-narrow", f"0 0 {NARROW.width} {NARROW.height}")
    assert narrow.find(f"{SVG}title").text == wide.find(f"{SVG}title").text == "t"


def test_an_empty_chart_says_what_it_is_told_in_lines_that_fit_its_box():
    empty = "one refit so far: convergence needs two"
    wide = parse(line_svg({"a": []}, title="t", x_label="x", y_label="y", empty=empty))
    narrow = parse(line_svg({"a": []}, title="t", x_label="x", y_label="y", empty=empty, box=NARROW))
    assert [span.text for span in wide.iter(f"{SVG}tspan")] == [empty]
    assert [span.text for span in narrow.iter(f"{SVG}tspan")] == ["one refit so far: convergence", "needs two"]
    assert wide.get("aria-label") == f"t. {empty}" and narrow.find(f"{SVG}desc").text == empty
