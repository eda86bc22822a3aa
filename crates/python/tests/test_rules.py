"""Learned rewrite rules from Python: ``UrlDedup(rules=...)``, ``url_dedup.learn``, and the
``URL_DEDUP_RULES`` setting of both Scrapy dupefilters in real crawls of a site whose aliases
only rules fold."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest

import url_dedup
from conftest import crawl, crawl_ok
from generated_site import Site
from processes import cargo_binary, run
from url_dedup import InvalidUrlError, Outcome, RulesError, UrlDedup, UrlDedupError, learn

DATA = Path(__file__).parent / "data" / "rules"
RULES = DATA / "shared.rules"
URLS = DATA / "urls.txt"

# Spellings the rules of shared.rules map onto one URL and canonicalization alone does not,
# with the URL they become under the default convention; and URLs they must leave alone.
FOLDED = [
    ("https://wiki.example/index.php?title=Main", "https://wiki.example/wiki/Main"),
    ("https://wiki.example/index.php?printable=yes&title=Main", "https://wiki.example/wiki/Main"),
    ("https://wiki.example/print/index.php?title=Other", "https://wiki.example/wiki/Other"),
    ("https://wiki.example/wiki/Main/", "https://wiki.example/wiki/Main"),
    ("http://shop.example:8080/list/shoes?page=1&sort=name", "http://shop.example:8080/list/shoes"),
    ("http://shop.example:8080/list/shoes?sort=a&page=2",
     "http://shop.example:8080/list/shoes?page=2"),
    ("http://SHOP.example:8080/./index.html?", "http://shop.example:8080/"),
    ("http://shop.example:8080/sess_4f2a91/list/shoes", "http://shop.example:8080/list/shoes"),
]
LEFT_ALONE = [
    "https://other.example/print/page",  # a host without rules
    "http://shop.example/list/shoes?sort=price",  # another port is another host
    "http://shop.example:8080/item/7?sort=price",  # outside the rule's paths
    "http://shop.example:8080/list/shoes?page=2",  # only page=1 is dropped
]


def rules_text() -> str:
    return RULES.read_text()


# --- UrlDedup(rules=...) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda: str(RULES), id="path-str"),
        pytest.param(lambda: RULES, id="pathlike"),
        pytest.param(rules_text, id="text"),
    ],
)
def test_rules_fold_what_canonicalization_does_not(given):
    plain = UrlDedup(1_000)
    ruled = UrlDedup(1_000, rules=given())
    assert ruled.rule_count == 8 and plain.rule_count == 0
    for alias, canonical in FOLDED:
        assert plain.canonicalize(alias) != canonical, alias
        assert ruled.canonicalize(alias) == canonical, alias
        assert ruled.check_and_insert(canonical) in (Outcome.NEW, Outcome.DUPLICATE)
        assert ruled.check_and_insert(alias) is Outcome.DUPLICATE, alias
        assert alias in ruled
    for url in LEFT_ALONE:
        assert ruled.canonicalize(url) == plain.canonicalize(url), url
    assert "rules=<8 rules>" in repr(ruled)


def test_rules_apply_in_batches_and_to_raw_keys():
    ruled = UrlDedup(1_000, rules=RULES)
    urls = [c for _, c in FOLDED] + [a for a, _ in FOLDED]
    answers = ruled.check_and_insert_batch_canonical(urls)
    assert [o for o, _ in answers[len(FOLDED):]] == [Outcome.DUPLICATE] * len(FOLDED)
    assert [c for _, c in answers[len(FOLDED):]] == [c for _, c in FOLDED]
    raw = UrlDedup(1_000, canonicalization=None, rules=RULES)
    assert raw.check_and_insert_bytes(b"https://wiki.example/print/wiki/Main") is Outcome.NEW
    assert raw.check_and_insert_bytes(b"https://wiki.example/wiki/Main") is Outcome.DUPLICATE


def test_rules_are_given_again_to_a_restored_state(tmp_path):
    """A state does not record rules: a restored one applies what it is given."""
    ruled = UrlDedup(1_000, rules=RULES)
    assert ruled.check_and_insert("https://wiki.example/wiki/Main") is Outcome.NEW
    ruled.save(tmp_path / "state")
    again = UrlDedup.load(tmp_path / "state", 1_000, rules=RULES)
    assert again.check_and_insert("https://wiki.example/print/wiki/Main") is Outcome.DUPLICATE
    from_bytes = UrlDedup.from_bytes(ruled.to_bytes(), 1_000, rules=rules_text())
    alias = "https://wiki.example/index.php?title=Main"
    assert from_bytes.check_and_insert(alias) is Outcome.DUPLICATE
    without = UrlDedup.load(tmp_path / "state", 1_000)
    assert without.check_and_insert("https://wiki.example/print/wiki/Main") is Outcome.NEW


def _command_run(cli: Path, mode: str, tmp_path: Path) -> tuple[list[str], list[tuple[str, ...]]]:
    """What ``url-dedup --rules`` prints for the shared URLs, and its --explain rows (kind,
    line, earlier line)."""
    explain = tmp_path / f"explain-{mode}.tsv"
    args = [str(cli), "--rules", str(RULES), "--exact", f"--explain={explain}", "--quiet"]
    args += ["--raw"] if mode == "raw" else ["--policy", mode, "--canonical"]
    result = run(args + [str(URLS)], timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    rows = []
    for row in explain.read_text().splitlines():
        kind, where, _line, earlier, _reason = row.split("\t")
        rows.append((kind, where.rsplit(":", 1)[1], earlier.rsplit(":", 1)[-1]))
    return result.stdout.decode().splitlines(), rows


def _python_run(mode: str, rules) -> tuple[list[str], list[tuple[str, ...]]]:
    """The same decisions made by ``UrlDedup(rules=...)``, in the command's terms."""
    dedup = UrlDedup(1_000, canonicalization=None if mode == "raw" else mode, filter="exact",
                     rules=rules)
    printed, rows, first = [], [], {}
    for n, line in enumerate(URLS.read_text().splitlines(), start=1):
        try:
            outcome, canonical = dedup.check_and_insert_canonical(line)
        except InvalidUrlError:
            rows.append(("invalid", str(n), "-"))
            continue
        if outcome is Outcome.NEW:
            first[canonical] = n
            printed.append(line if mode == "raw" else canonical)
        else:
            rows.append(("duplicate", str(n), str(first[canonical])))
    return printed, rows


@pytest.fixture(scope="module")
def cli() -> Path:
    return cargo_binary("url-dedup-cli", "url-dedup")


@pytest.mark.parametrize("mode", [*url_dedup.CONVENTIONS, "raw"])
def test_rules_decide_as_the_command_does(cli, tmp_path, mode):
    """The shared URL set, decided by the command and by the bindings with the same rules:
    the same lines kept, in the same canonical forms, each dropped line folded into the same
    earlier line."""
    expected = _command_run(cli, mode, tmp_path)
    assert _python_run(mode, RULES) == expected
    assert _python_run(mode, rules_text()) == expected
    if mode in ("crawler", "w3lib", "raw"):
        # The rules fold lines here: a deduplicator without them is not what the command did.
        assert _python_run(mode, None) != expected


# --- bad rules ----------------------------------------------------------------------------

BAD = [
    pytest.param("host \"h.example\"\n", 1, "starts with `rules-format 1`", id="no-format-line"),
    pytest.param("rules-format 2\n", 1, "not one this version reads", id="other-version"),
    pytest.param("rules-format 1\nreplace \"/a/\" \"/\"\n", 2, "after a `host` line", id="no-host"),
    pytest.param("rules-format 1\n# a comment\nhost \"h\"\n\nreplace \"/print/\"\n", 5,
                 "at the end of the line", id="missing-operand"),
    pytest.param("rules-format 1\nhost \"h\"\nignore-param \"a\" in \"/x\n", 3, "not closed",
                 id="open-string"),
    pytest.param("rules-format 1\nhost \"h\"\nfold \"a\"\n", 3, "", id="unknown-rule"),
    pytest.param("rules-format 1\nhost \"h\"\n    support pages=1\n", 3, "indented",
                 id="detail-without-rule"),
]


@pytest.mark.parametrize(("text", "line", "reason"), BAD)
def test_bad_rules_text_raises_rules_error_with_its_line(text, line, reason):
    with pytest.raises(RulesError) as info:
        UrlDedup(1_000, rules=text)
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, UrlDedupError)
    assert (e.line, e.path) == (line, None)
    assert str(e).startswith(f"line {line}: ") and reason in str(e)


@pytest.mark.parametrize(("text", "line", "reason"), BAD)
def test_a_bad_rules_file_raises_rules_error_naming_file_and_line(tmp_path, text, line, reason):
    path = tmp_path / "site.rules"
    path.write_text(text)
    for given in (path, str(path)):
        with pytest.raises(RulesError) as info:
            UrlDedup.load(tmp_path / "never-read", rules=given)
        assert (info.value.line, info.value.path) == (line, str(path))
        assert str(info.value).startswith(f"{path}:{line}: ") and reason in str(info.value)


def test_rules_that_are_not_utf8_name_the_line(tmp_path):
    path = tmp_path / "site.rules"
    path.write_bytes(b'rules-format 1\nhost "h"\nreplace "/\xe9t\xe9/" "/"\n')
    with pytest.raises(RulesError) as info:
        UrlDedup(1_000, rules=path)
    assert info.value.line == 3 and "UTF-8" in str(info.value)


def test_unreadable_rules_raise_os_errors_naming_the_file(tmp_path):
    missing = tmp_path / "missing.rules"
    with pytest.raises(FileNotFoundError) as info:
        UrlDedup(1_000, rules=missing)
    assert info.value.filename == str(missing)
    with pytest.raises(IsADirectoryError):
        UrlDedup(1_000, rules=tmp_path)
    with pytest.raises(TypeError):
        UrlDedup(1_000, rules=42)


def test_a_one_line_string_is_a_path_and_a_text_needs_a_line_break(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules-format 1").write_text(rules_text())
    assert UrlDedup(1_000, rules="rules-format 1").rule_count == 8
    assert UrlDedup(1_000, rules="rules-format 1\n").rule_count == 0


# --- learn ---------------------------------------------------------------------------------


def _alias_pages(ids, digest=lambda i: f"sha1:{i:040d}"):
    """Pages of one site, each fetched under its own URL, a print view and a session token."""
    for i in ids:
        for url in (f"https://news.example/story/{i}",
                    f"https://news.example/story/{i}?print=yes",
                    f"https://news.example/s-{i * 7919 % 1000:03d}x/story/{i}"):
            yield url, digest(i)


def test_learned_rules_fold_the_aliases_of_pages_never_seen():
    text = learn(_alias_pages(range(20)))
    assert text.startswith("rules-format 1\n") and "status candidate" in text
    ruled = UrlDedup(1_000, rules=text)
    assert ruled.rule_count >= 2
    unseen = list(_alias_pages(range(100, 130)))
    answers = [ruled.check_and_insert(url) for url, _ in unseen]
    assert answers == [Outcome.NEW, Outcome.DUPLICATE, Outcome.DUPLICATE] * 30
    # Distinct pages stay distinct.
    assert ruled.check_and_insert("https://news.example/story/131") is Outcome.NEW
    assert "status candidate" not in learn(_alias_pages(range(20)), confirmed=True)


def test_learning_never_folds_pages_whose_contents_differ():
    """The print view here is another page (its digest differs): no rule may fold it."""
    pages = [(url, f"{i}-{'print' if 'print' in url else 'page'}") for url, i in
             ((u, int(u.split("/")[-1].split("?")[0])) for u, _ in _alias_pages(range(20)))]
    ruled = UrlDedup(1_000, rules=learn(pages))
    assert ruled.check_and_insert("https://news.example/story/500") is Outcome.NEW
    assert ruled.check_and_insert("https://news.example/story/500?print=yes") is Outcome.NEW


def test_a_form_with_a_return_address_per_article_is_learned_from_its_urls():
    """One page with many URLs: fewer than min_pages pages, at least min_urls URLs."""
    pages = [(f"https://wiki.example/story/{i}", f"story-{i}") for i in range(20)]
    pages += [(f"https://wiki.example/login?returnto=story/{i}", "form") for i in range(20)]
    ruled = UrlDedup(1_000, rules=learn(pages))
    assert ruled.canonicalize("https://wiki.example/login?returnto=story/99") == "https://wiki.example/login"
    assert UrlDedup(1_000, rules=learn(pages, min_urls=30)).rule_count == 0


def test_learn_takes_bytes_or_text_digests_and_simhashes():
    as_text = learn(_alias_pages(range(20)))
    as_bytes = learn(_alias_pages(range(20), digest=lambda i: i.to_bytes(20, "big")))
    # Pages far apart: SimHashes change nothing.
    far = learn((u, d, int(d[5:]) * 0x9E3779B97F4A7C15 % 2**64) for u, d in _alias_pages(range(20)))
    assert as_text == as_bytes == far
    with pytest.raises(OverflowError):
        learn([("https://h.example/a", "d", 2**64)])


def test_learn_refuses_bad_input():
    with pytest.raises(InvalidUrlError):
        learn([("https://h.example/a", "d"), ("/relative", "d")])
    with pytest.raises(InvalidUrlError):
        learn([("no-scheme", "d")], canonicalization=None)
    with pytest.raises(TypeError):
        learn([("https://h.example/a", 5)])
    with pytest.raises(ValueError):
        learn([("https://h.example/a",)])
    with pytest.raises(ValueError):
        learn([], canonicalization="nonesuch")
    assert learn([]) == learn([], confirmed=True)


def test_learn_docstring_example_runs():
    test = doctest.DocTestParser().get_doctest(
        learn.__doc__, {"learn": learn, "UrlDedup": UrlDedup}, "learn", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert test.examples and runner.failures == 0


# --- Scrapy --------------------------------------------------------------------------------

OURS = "url_dedup.scrapy.DupeFilter"


@pytest.fixture
def alias_site():
    s = Site(aliases=True)
    yield s
    s.close()


@pytest.fixture
def site_rules(alias_site, tmp_path) -> Path:
    path = tmp_path / "site.rules"
    path.write_text(alias_site.rules())
    return path


def redis_settings(redis_url: str, **extra: str) -> dict[str, str]:
    return {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "url_dedup.scrapy.RedisDupeFilter",
        "REDIS_URL": redis_url,
        "URL_DEDUP_REDIS_PREFIX": "%(spider)s:seen",
        **extra,
    }


@pytest.mark.parametrize("dupefilter", ["local", "local-jobdir", "redis"])
def test_a_crawl_with_rules_fetches_each_page_once(alias_site, site_rules, tmp_path, request,
                                                   dupefilter):
    start = [alias_site.url("a/0"), alias_site.url("b/0")]

    def settings(job: str, **extra: str) -> dict[str, str]:
        if dupefilter == "redis":
            return redis_settings(request.getfixturevalue("redis_url"), **extra)
        if dupefilter == "local-jobdir":
            extra["JOBDIR"] = str(tmp_path / job)
        return {"DUPEFILTER_CLASS": OURS, **extra}

    # Without the rules the print views and sort orders are pages of their own.
    crawl_ok(settings("without", URL_DEDUP_KEY="url"), start)
    assert alias_site.fetched() == alias_site.pages()
    assert len(alias_site.fetched_twice()) > len(alias_site.pages()) // 2
    alias_site.reset()
    if dupefilter == "redis":
        request.getfixturevalue("redis_server").client().flushall()
    log = crawl_ok(settings("with", URL_DEDUP_RULES=str(site_rules)), start)
    assert alias_site.fetched() == alias_site.pages()
    assert alias_site.fetched_twice() == {}
    assert f"Rewriting URLs with 2 learned rules from {site_rules}" in log


def test_a_bad_rules_file_stops_the_crawl_before_a_fetch(alias_site, tmp_path):
    bad = tmp_path / "site.rules"
    bad.write_text(alias_site.rules().replace('replace "/print/" "/"', 'replace "/print/"'))
    result = crawl({"DUPEFILTER_CLASS": OURS, "URL_DEDUP_RULES": str(bad)},
                   [alias_site.url("a/0")])
    log = result.stderr.decode(errors="replace")
    assert result.returncode != 0
    assert f"RulesError: {bad}:3: " in log
    assert alias_site.fetched() == set()


def test_rules_need_url_keys():
    from scrapy.settings import Settings

    from url_dedup.scrapy import DupeFilter, RedisDupeFilter, _RequestKeys

    rules = rules_text()
    keys = _RequestKeys.from_settings(Settings({"URL_DEDUP_RULES": rules}), "fingerprint")
    assert keys.by_url
    keys = _RequestKeys.from_settings(Settings({}), "fingerprint")
    assert not keys.by_url
    explicit = Settings({"URL_DEDUP_RULES": rules, "URL_DEDUP_KEY": "fingerprint"})
    keys = _RequestKeys.from_settings(explicit, "fingerprint")
    with pytest.raises(ValueError, match='URL_DEDUP_KEY = "url"'):
        DupeFilter(keys=keys, options=keys.dedup_options(explicit))
    with pytest.raises(ValueError, match='URL_DEDUP_KEY = "url"'):
        RedisDupeFilter("redis://127.0.0.1:1/0", "never", keys=keys,
                        options=keys.dedup_options(explicit))


def test_the_setting_takes_rules_text_too():
    from scrapy import Request
    from scrapy.settings import Settings

    from url_dedup.scrapy import DupeFilter, _RequestKeys

    settings = Settings({"URL_DEDUP_RULES": rules_text()})
    keys = _RequestKeys.from_settings(settings, "fingerprint")
    f = DupeFilter(keys=keys, options=keys.dedup_options(settings))
    assert f.dedup.rule_count == 8
    assert not f.request_seen(Request("https://wiki.example/wiki/Main"))
    assert f.request_seen(Request("https://wiki.example/index.php?title=Main"))
    assert not f.request_seen(Request("https://wiki.example/wiki/Other"))


def test_paths_are_read_as_given(tmp_path, monkeypatch):
    """A relative path is relative to the working directory, as Scrapy's other file settings."""
    monkeypatch.chdir(tmp_path)
    Path("site.rules").write_text(rules_text())
    assert UrlDedup(1_000, rules="site.rules").rule_count == 8
    assert UrlDedup(1_000, rules=Path(os.curdir, "site.rules")).rule_count == 8
