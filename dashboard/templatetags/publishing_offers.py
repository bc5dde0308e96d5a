"""What a page offers to publish follows what publishing would do (crowd.work.publishing):
`{% load publishing_offers %}` then `{% with refusal=topic|publish_refusal %}`."""

from django import template

from annotation.models import Topic
from crowd.work.publishing import topic_publish_refusal

register = template.Library()


@register.filter
def publish_refusal(topic: Topic) -> str:
    """Why publishing the topic would be refused ("" when it would go ahead)."""
    return topic_publish_refusal(topic=topic)
