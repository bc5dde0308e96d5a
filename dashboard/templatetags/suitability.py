"""`{% suitability_card campaign %}`: the campaign page's line on suitability filtering — the
share removed and the crowd money saved in the campaign's channel terms — before publishing."""

from django import template

from annotation.suitability.decisions import filter_summary
from crowd.work.savings import suitability_saving

register = template.Library()


@register.inclusion_tag("suitability/_campaign_card.html")
def suitability_card(campaign):
    return {
        "campaign": campaign,
        "summary": filter_summary(campaign=campaign),
        "saving": suitability_saving(campaign=campaign),
    }
