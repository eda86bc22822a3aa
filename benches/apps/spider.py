"""A Scrapy CrawlSpider with its defaults: follows every link of the seed's host
(benches/dust-apps.sh). `scrapy runspider spider.py -a seed=URL`."""
from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class Site(CrawlSpider):
    name = "site"
    rules = (Rule(LinkExtractor(), follow=True),)

    def __init__(self, seed, *args, **kwargs):
        self.start_urls = [seed]
        self.allowed_domains = [urlsplit(seed).hostname]
        super().__init__(*args, **kwargs)
