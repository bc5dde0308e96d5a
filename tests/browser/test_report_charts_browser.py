"""The researcher's report pages at a desktop's and a phone's width, in Chromium: chart text a
reader can read, chart marks inside their plot, and a table's caption that does not scroll away
with a wide table."""

import pytest
from django.conf import settings

from annotation.models import Topic
from crowd.qc.worker_quality import campaign_quality_refresh
from ranking.models import PropositionScore, RankingSnapshot
from tests.browser.conftest import DESKTOP, PHONE
from tests.crowd.quality_data import TRAPS, LabelBuilder, small_crowd_labels
from tests.factories import CampaignFactory, PropositionFactory, TopicFactory

pytestmark = pytest.mark.browser

WIDTHS = {1280: DESKTOP, 390: PHONE}
READABLE_PX = 11  # the smallest chart text, in CSS pixels on the screen

# Every text of the charts a reader sees: its font size in user units times the user unit's
# size on the screen (a viewBox scales both with the figure), and whether it lies inside its
# chart (an svg clips what reaches past its edge).
CHART_TEXT_PX = """figures => figures.flatMap(figure =>
  [...figure.querySelectorAll("svg.chart")].filter(svg => svg.getBoundingClientRect().width > 0).flatMap(svg => {
    const chart = svg.getBoundingClientRect(), scale = chart.width / svg.viewBox.baseVal.width;
    return [...svg.querySelectorAll("text")].map(text => {
      const r = text.getBoundingClientRect();
      return {
        text: text.textContent, px: parseFloat(getComputedStyle(text).fontSize) * scale,
        inside: r.left >= chart.left - 0.5 && r.right <= chart.right + 0.5
          && r.top >= chart.top - 0.5 && r.bottom <= chart.bottom + 0.5,
      };
    });
  }))"""
# The plot area (the axes' box) and every mark matching `selector` (the μ ± σ chart's interval
# bars, a histogram's bars) of the figure's visible chart, on the screen.
MARKS_AND_PLOT = """(figure, selector) => {
  const svg = [...figure.querySelectorAll("svg.chart")].find(svg => svg.getBoundingClientRect().width > 0);
  const box = element => { const r = element.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  return {plot: box(svg.querySelector(".chart-axis")), bars: [...svg.querySelectorAll(selector)].map(box)};
}"""


@pytest.fixture
def signed_in(open_context, live_server, client, owner):
    """open_context(**options), signed in as `owner` by the session cookie of a logged-in client."""
    client.force_login(owner)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value

    def open_(**options):
        context = open_context(**options)
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}])
        return context

    return open_


@pytest.fixture
def finished_topic(owner):
    """A done topic whose ten propositions went through one refit (so no Spearman yet), with
    μ ± σ like a small real run: the best at 31.27 ± 5.43."""
    campaign = CampaignFactory(owner=owner, slug="composting", name="Composting study")
    topic = TopicFactory(campaign=campaign, key="home-composting", state=Topic.State.DONE)
    propositions = PropositionFactory.create_batch(10, topic=topic)
    scores = [(31.27 - 1.8 * i, 5.43 + i / 100) for i in range(10)]
    PropositionScore.objects.bulk_create(
        PropositionScore(
            proposition=p, likert_mean=4.5, likert_n=3, in_comparisons=True, mu=mu, sigma=sigma, comparisons=12, rank=i
        )
        for i, (p, (mu, sigma)) in enumerate(zip(propositions, scores), start=1)
    )
    RankingSnapshot.objects.create(
        topic=topic,
        number=1,
        comparisons_used=60,
        ranking=[[p.pk, mu, sigma] for p, (mu, sigma) in zip(propositions, scores)],
    )
    return topic


def ranking_page(signed_in, live_server, topic, width: int):
    page = signed_in(**WIDTHS[width]).new_page()
    page.goto(f"{live_server.url}/campaigns/{topic.campaign.slug}/topics/{topic.key}/ranking/")
    return page


def fits_the_screen(page) -> bool:
    """No sideways scrolling of the page (on a phone it would zoom out, shrinking everything)."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_ranking_charts_text_is_readable_at_a_phones_and_a_desktops_width(
    signed_in, live_server, finished_topic, width
):
    page = ranking_page(signed_in, live_server, finished_topic, width)

    texts = page.locator("#convergence, #top-intervals").evaluate_all(CHART_TEXT_PX)

    assert fits_the_screen(page)
    assert {"comparisons used", "rank", "μ ± σ"} <= {text["text"] for text in texts}  # the axis labels
    assert len([text for text in texts if text["text"] == "rank"]) == 1  # one drawing of each chart is shown
    small = [text for text in texts if text["px"] < READABLE_PX]
    assert small == [], f"chart text under {READABLE_PX} px at {width} px wide: {small[:5]}"
    assert [text["text"] for text in texts if not text["inside"]] == []  # none cut off at the chart's edge


@pytest.mark.parametrize("width", WIDTHS)
def test_the_best_propositions_bar_stays_inside_the_plot(signed_in, live_server, finished_topic, width):
    page = ranking_page(signed_in, live_server, finished_topic, width)

    geometry = page.locator("#top-intervals").evaluate(MARKS_AND_PLOT, ".chart-interval path")

    plot, bars = geometry["plot"], geometry["bars"]
    assert len(bars) == 10
    assert min(bar["top"] for bar in bars) > plot["top"] + 1  # room above the rank-1 bar, under a labelled line
    assert max(bar["bottom"] for bar in bars) <= plot["bottom"] + 0.5


@pytest.mark.parametrize("width", WIDTHS)
def test_one_refit_says_that_convergence_needs_two(signed_in, live_server, finished_topic, width):
    page = ranking_page(signed_in, live_server, finished_topic, width)

    said = " ".join(page.locator("#convergence svg.chart:visible").text_content().split())

    assert "one refit so far: convergence needs two" in said and "no data yet" not in said


@pytest.fixture
def quality_report(owner):
    campaign = CampaignFactory(owner=owner, slug="loans-run", name="Student loans, run 1", qc_max_label_share=0.3)
    LabelBuilder(TopicFactory(campaign=campaign, key="loans")).likert(small_crowd_labels(), TRAPS)
    campaign_quality_refresh(campaign_id=campaign.pk)
    return campaign


@pytest.mark.parametrize("path", ["", "topics/loans/"])
def test_a_wide_tables_caption_stays_on_a_phones_screen_when_the_table_scrolls(
    signed_in, live_server, quality_report, path
):
    page = signed_in(**PHONE).new_page()
    page.goto(f"{live_server.url}/campaigns/{quality_report.slug}/{path}quality/")
    tables = page.locator("table.quality-stats[aria-describedby], table.quality-workers[aria-describedby]")
    assert tables.count() == 2  # Agreement, Workers

    for table in tables.all():
        wrap = table.locator("xpath=..")
        assert wrap.evaluate("wrap => wrap.scrollWidth > wrap.clientWidth")  # the table scrolls sideways
        wrap.evaluate("wrap => { wrap.scrollLeft = wrap.scrollWidth; }")
        caption = page.locator(f"#{table.get_attribute('aria-describedby')}")
        caption.scroll_into_view_if_needed()
        box = caption.bounding_box()
        assert caption.is_visible() and caption.text_content().strip()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert fits_the_screen(page)


def quality_page(signed_in, live_server, campaign, path: str, width: int):
    page = signed_in(**WIDTHS[width]).new_page()
    page.goto(f"{live_server.url}/campaigns/{campaign.slug}/{path}quality/")
    return page


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", ["", "topics/loans/"])
def test_the_quality_charts_text_is_readable_at_a_phones_and_a_desktops_width(
    signed_in, live_server, quality_report, path, width
):
    page = quality_page(signed_in, live_server, quality_report, path, width)

    texts = page.locator("#loo-histogram, #stability").evaluate_all(CHART_TEXT_PX)

    assert fits_the_screen(page)
    axis_labels = {"Pearson r with the other workers' mean", "workers", "labels per proposition"}
    assert axis_labels <= {text["text"] for text in texts}
    assert len([text for text in texts if text["text"] in axis_labels]) == 3  # one drawing of each chart is shown
    small = [text for text in texts if text["px"] < READABLE_PX]
    assert small == [], f"chart text under {READABLE_PX} px at {width} px wide: {small[:5]}"
    assert [text["text"] for text in texts if not text["inside"]] == []  # none cut off at the chart's edge


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", ["", "topics/loans/"])
def test_the_histograms_tallest_bar_stays_inside_the_plot(signed_in, live_server, quality_report, path, width):
    page = quality_page(signed_in, live_server, quality_report, path, width)

    geometry = page.locator("#loo-histogram").evaluate(MARKS_AND_PLOT, ".chart-bar")

    plot, bars = geometry["plot"], geometry["bars"]
    assert bars  # every worker with an r is in a bar
    assert min(bar["top"] for bar in bars) > plot["top"] + 1  # room above the tallest bar, under a labelled line
    assert max(bar["bottom"] for bar in bars) <= plot["bottom"] + 0.5
