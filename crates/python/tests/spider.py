"""The spider the crawl tests run in a Scrapy process: follows every link of the test site.

``-a start=URL`` (repeatable as a comma-separated list) names the start pages; they are
requested *with* filtering, so a resumed crawl that had fetched them does not fetch them
again, and several processes starting at one page fetch it once. ``-a again=URL`` requests
one page a second time with ``dont_filter=True`` once the first is fetched.
"""

from __future__ import annotations

import scrapy


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start: str = "", again: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_pages = [u for u in start.split(",") if u]
        self.again = again

    async def start(self):
        for url in self.start_pages:
            yield scrapy.Request(url, dont_filter=False)

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
        if self.again and response.url == self.start_pages[0]:
            yield scrapy.Request(self.again, dont_filter=True, callback=self.parse_again)
            yield scrapy.Request(self.again, callback=self.parse_again)

    def parse_again(self, response):
        return None
