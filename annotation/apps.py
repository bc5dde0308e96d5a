from django.apps import AppConfig
from django.urls import register_converter

from annotation.url_keys import TopicKeyConverter


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self):
        register_converter(TopicKeyConverter, "topic_key")
