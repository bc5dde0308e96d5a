"""What a page offers to edit of a topic's description follows what saving would do
(annotation.topic_descriptions): `{% load description_offers %}` then
`{% if not topic|description_refusal %}`, for a topic with `likert_built`."""

from django import template

from annotation.models import Topic
from annotation.topic_descriptions import topic_description_refusal

register = template.Library()


@register.filter
def description_refusal(topic: Topic) -> str:
    """Why a new description of the topic would be refused ("" when saving would be accepted)."""
    return topic_description_refusal(topic)
