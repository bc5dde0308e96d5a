"""What is specific to participant links, for the generic code that asks: nobody is paid,
there is no remote environment, and tasks are handed out in sessions."""

from crowd.marketplaces.base import ChannelPolicy, PaymentUnit


class LinksPolicy(ChannelPolicy):
    channel = "links"
    label = "Participant links"
    short_name = "participant links"
    unit = PaymentUnit.NONE
    sessions = True
    environments = (("local", "This server"),)
    fees_wording = "no fees: participant links pay nobody"
    summary = "Participant links hand sessions of several tasks in a row to people you invite; nobody is paid."
    page_sections = ("links",)
    after_publish = "Next: create participant links on the campaign's Channel page and hand them out."
