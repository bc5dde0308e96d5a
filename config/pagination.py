"""How the API's lists come in pages: `?page=` and `?page_size=` (50 by default, at most
500), with `count`, `next`, `previous` and `results` in every answer, so a client walks a
list of any length with the same few queries per page."""

from rest_framework.pagination import PageNumberPagination


class Pages(PageNumberPagination):
    page_size_query_param = "page_size"
    page_size_query_description = "Results per page: 50 by default, at most 500 (a larger number reads as 500)."
    max_page_size = 500
