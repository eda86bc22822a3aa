"""Real Scrapy crawls of the generated site through url_dedup.scrapy.DupeFilter, with Scrapy's
own RFPDupeFilter beside it as the reference behaviour."""

from __future__ import annotations

import pytest

from conftest import crawl_ok

OURS = "url_dedup.scrapy.DupeFilter"
SCRAPY = "scrapy.dupefilters.RFPDupeFilter"

KEYINGS = [
    pytest.param({"DUPEFILTER_CLASS": SCRAPY}, id="scrapy-rfp"),
    pytest.param({"DUPEFILTER_CLASS": OURS}, id="fingerprint"),
    pytest.param({"DUPEFILTER_CLASS": OURS, "URL_DEDUP_KEY": "url"}, id="url-crawler"),
    pytest.param(
        {"DUPEFILTER_CLASS": OURS, "URL_DEDUP_KEY": "url", "URL_DEDUP_CANONICALIZATION": "w3lib"},
        id="url-w3lib",
    ),
]


@pytest.mark.parametrize("settings", KEYINGS)
def test_every_page_is_fetched_once(site, settings):
    start = [site.url("a/0"), site.url("b/0")]
    crawl_ok(settings, start)
    assert site.fetched() == site.pages()
    assert site.fetched_twice() == {}


@pytest.mark.parametrize("settings", KEYINGS)
def test_a_paused_crawl_resumes_without_fetching_a_page_again(site, tmp_path, settings):
    settings = {**settings, "JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": "1"}
    start = [site.url("a/0"), site.url("b/0")]
    # Paused after 40 pages: the pending requests stay in JOBDIR's queue, the seen ones in
    # the dupefilter's state.
    log = crawl_ok({**settings, "CLOSESPIDER_PAGECOUNT": "40"}, start)
    assert "closespider_pagecount" in log
    first = site.fetched()
    assert 40 <= len(first) < len(site.pages())
    crawl_ok(settings, start)
    assert site.fetched() == site.pages()
    assert site.fetched_twice() == {}
    # A finished crawl, resumed, fetches nothing at all.
    site.reset()
    crawl_ok(settings, start)
    assert site.fetched() == set()


def test_the_state_lives_in_jobdir(site, tmp_path):
    job = tmp_path / "job"
    log = crawl_ok({"DUPEFILTER_CLASS": OURS, "JOBDIR": str(job)}, [site.url("a/0")])
    assert "[url_dedup.scrapy] WARNING" not in log
    assert (job / "url-dedup.state").stat().st_size > 0
    # Everything was folded into the state at close.
    assert (job / "url-dedup.journal").stat().st_size == 0


def test_a_jobdir_of_another_dupefilter_is_a_warning(site, tmp_path):
    """A crawl paused under Scrapy's own dupefilter and resumed under ours: the requests it
    saw are not in our state, which must not go unsaid."""
    settings = {"JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": "1"}
    start = [site.url("a/0")]
    crawl_ok({**settings, "DUPEFILTER_CLASS": SCRAPY, "CLOSESPIDER_PAGECOUNT": "10"}, start)
    log = crawl_ok({**settings, "DUPEFILTER_CLASS": OURS}, start)
    (warning,) = [line for line in log.splitlines() if "[url_dedup.scrapy] WARNING" in line]
    assert "requests.seen exists" in warning


def test_a_journal_left_by_a_killed_crawl_is_replayed(site, tmp_path):
    """A crawl killed outright never saves its state: the keys it admitted are in the journal."""
    from scrapy import Request

    from url_dedup.scrapy import DupeFilter, _RequestKeys

    job = tmp_path / "job"
    job.mkdir()
    keys = _RequestKeys("url", "crawler", None)
    first = DupeFilter(job, keys=keys)
    urls = [site.url(p) for p in sorted(site.pages())]
    assert not any(first.request_seen(Request(u)) for u in urls)
    assert not first.request_seen(Request("data:,hello"))
    first.journal.flush()  # what the OS has when the process dies; close() is never called
    # A torn last record, as a kill mid-write leaves it.
    with open(job / "url-dedup.journal", "ab") as journal:
        journal.write(b"\x00\x00\x00\x01\x00half")
    resumed = DupeFilter(job, keys=keys)
    assert all(resumed.request_seen(Request(u + "#again")) for u in urls)
    assert resumed.request_seen(Request("data:,hello"))
    assert not resumed.request_seen(Request(site.base + "/new"))
    resumed.close("finished")
    again = DupeFilter(job, keys=keys)
    assert again.request_seen(Request(site.base + "/new"))


def test_jobdir_files_are_private_and_never_written_through_a_link(tmp_path):
    import stat

    from url_dedup.scrapy import DupeFilter

    job = tmp_path / "job"
    job.mkdir()
    DupeFilter(job).close("finished")
    for name in ("url-dedup.state", "url-dedup.journal"):
        assert stat.S_IMODE((job / name).stat().st_mode) == 0o600, name
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (job / "url-dedup.journal").unlink()
    (job / "url-dedup.journal").symlink_to(target)
    with pytest.raises(OSError):
        DupeFilter(job)
    assert target.read_bytes() == b"keep"


def test_a_state_saved_under_other_settings_is_refused(site, tmp_path):
    job = str(tmp_path / "job")
    crawl_ok({"DUPEFILTER_CLASS": OURS, "JOBDIR": job}, [site.url("a/0")])
    from conftest import crawl

    result = crawl({"DUPEFILTER_CLASS": OURS, "JOBDIR": job, "URL_DEDUP_KEY": "url"},
                   [site.url("a/0")])
    assert b"ConfigMismatchError" in result.stderr
    # The refused start left no sign of a kill behind.
    log = crawl_ok({"DUPEFILTER_CLASS": OURS, "JOBDIR": job}, [site.url("a/0")])
    assert "[url_dedup.scrapy] WARNING" not in log


@pytest.mark.parametrize("settings", KEYINGS[1:])
def test_dont_filter_requests_are_fetched_again(site, settings):
    again = site.url("a/5")
    crawl_ok(settings, [site.url("a/0")], again=again)
    assert site.fetched_twice() == {"a/5": 2}


def test_a_resume_after_a_kill_says_queued_requests_were_lost(site, tmp_path):
    """Scrapy writes the index of JOBDIR's request queue only when the spider closes: a crawl
    killed outright resumes with no queue, while the filter remembers what it admitted, so
    those requests are never fetched. The loss is Scrapy's; it must not go unsaid."""
    from conftest import scrapy_process

    settings = {"DUPEFILTER_CLASS": OURS, "JOBDIR": str(tmp_path / "job"),
                "CONCURRENT_REQUESTS": "1"}
    start = [site.url("a/0")]
    arrived = site.hold("a/20")
    proc = scrapy_process(settings, start)
    assert arrived.wait(120), "the crawl never reached a/20"
    proc.kill()
    proc.communicate()
    site.release()
    log = crawl_ok(settings, start)
    (warning,) = [line for line in log.splitlines() if "[url_dedup.scrapy] WARNING" in line]
    assert "did not close" in warning
    # That resumed crawl closed: the next resume is a normal one.
    log = crawl_ok(settings, start)
    assert "[url_dedup.scrapy] WARNING" not in log
