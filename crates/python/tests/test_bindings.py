"""The UrlDedup class, as a Python program uses it."""

from __future__ import annotations

import math
import os
import stat
import threading

import pytest

import url_dedup
from url_dedup import (
    ConfigMismatchError,
    FilterError,
    InvalidUrlError,
    NotUtf8Error,
    Outcome,
    SnapshotError,
    UrlDedup,
    UrlDedupError,
)


def test_spellings_of_one_page_are_one_url():
    d = UrlDedup(1_000)
    assert d.check_and_insert("https://example.com/?b=2&a=1&utm_source=feed") is Outcome.NEW
    assert d.check_and_insert("HTTPS://EXAMPLE.com:443/?a=1&b=2#top") is Outcome.DUPLICATE
    assert d.check_and_insert("https://example.com/other") is Outcome.NEW
    assert Outcome.NEW.is_new and not Outcome.DUPLICATE.is_new and not Outcome.SIMILAR.is_new
    assert str(Outcome.DUPLICATE) == "duplicate"


def test_canonical_form_is_returned():
    d = UrlDedup(1_000)
    assert d.check_and_insert_canonical("HTTPS://Example.COM:443/a/./b") == (
        Outcome.NEW,
        "https://example.com/a/b",
    )
    assert d.canonicalize("http://Example.com:80") == "http://example.com/"


def test_invalid_urls_raise_typed_errors_and_are_not_recorded():
    d = UrlDedup(1_000)
    with pytest.raises(InvalidUrlError) as info:
        d.check_and_insert("mailto:someone@example.com")
    assert isinstance(info.value, ValueError) and isinstance(info.value, UrlDedupError)
    with pytest.raises(InvalidUrlError):
        d.contains("/relative")
    assert "/relative" not in d


def test_batches_answer_in_order_with_errors_in_place():
    d = UrlDedup(1_000)
    answers = d.check_and_insert_batch(
        iter(["https://a.example/", "not a url", "https://a.example/#x", "https://b.example/"])
    )
    assert answers[0] is Outcome.NEW
    assert isinstance(answers[1], InvalidUrlError)
    assert answers[2] is Outcome.DUPLICATE
    assert answers[3] is Outcome.NEW
    canonical = d.check_and_insert_batch_canonical(["HTTP://C.example:80/x/../y"])
    assert canonical == [(Outcome.NEW, "http://c.example/y")]
    with pytest.raises(TypeError):
        d.check_and_insert_batch([b"bytes are not URLs"])


def test_raw_keys_are_compared_byte_for_byte():
    raw = UrlDedup(1_000, canonicalization=None)
    fingerprint = bytes(range(20))
    assert raw.check_and_insert_bytes(fingerprint) is Outcome.NEW
    assert raw.check_and_insert_bytes(fingerprint) is Outcome.DUPLICATE
    assert raw.check_and_insert("https://EXAMPLE.com/") is Outcome.NEW
    assert raw.check_and_insert("https://example.com/") is Outcome.NEW
    assert raw.check_and_insert_batch_bytes([b"\xff", b"\xff", "text"]) == [
        Outcome.NEW,
        Outcome.DUPLICATE,
        Outcome.NEW,
    ]
    canonicalizing = UrlDedup(1_000)
    with pytest.raises(NotUtf8Error):
        canonicalizing.check_and_insert_bytes(b"http://example.com/caf\xe9")
    assert canonicalizing.check_and_insert_bytes(b"HTTP://Example.com") is Outcome.NEW
    assert canonicalizing.contains("http://example.com/")


def test_named_conventions():
    assert url_dedup.CONVENTIONS == ["crawler", "rfc3986", "w3lib", "safe-browsing", "ia", "surt"]
    # w3lib keeps tracking parameters, as Scrapy's canonicalize_url does.
    assert url_dedup.canonicalize("http://www.example.com/do?utm_source=x&a=1", "w3lib") == (
        "http://www.example.com/do?a=1&utm_source=x"
    )
    assert url_dedup.canonicalize("http://www.example.com/do?utm_source=x&a=1") == (
        "http://www.example.com/do?a=1"
    )
    assert url_dedup.surt("http://www.archive.org/goo/?b&a") == "org,archive)/goo?a&b"
    with pytest.raises(ValueError, match="w3lib"):
        url_dedup.canonicalize("http://example.com/", "scrapy2")
    d = UrlDedup(1_000, canonicalization="w3lib")
    assert d.canonicalization == "w3lib"
    d.check_and_insert("http://example.com/?utm_source=x")
    assert d.check_and_insert("http://example.com/") is Outcome.NEW


def test_w3lib_convention_agrees_with_w3lib():
    w3lib_url = pytest.importorskip("w3lib.url")
    urls = [
        "http://www.example.com/do?b=2&a=1#frag",
        "http://www.example.com/a%2fb/%7Ebob?q=a space&x=%20",
        "HTTP://Example.COM:80/./news/../index.html?utm_source=x",
        "https://example.com/caf\u00e9?q=\u00e9t\u00e9",
        "http://example.com/path;params?k=v&k=w&a",
    ]
    for url in urls:
        assert url_dedup.canonicalize(url, "w3lib") == w3lib_url.canonicalize_url(url), url


def test_similarity_preset_folds_presentation_parameters():
    d = UrlDedup(1_000, similarity="crawler")
    assert d.check_and_insert("https://shop.example/list?sort=price") is Outcome.NEW
    assert d.check_and_insert("https://shop.example/list?sort=name") is Outcome.SIMILAR
    assert d.check_and_insert("https://shop.example/list?sort=name") is Outcome.DUPLICATE
    with pytest.raises(ValueError, match="document004"):
        UrlDedup(similarity="fuzzy")


def test_page_preset_folds_as_the_crawler_preset_in_less_memory():
    sorts = ["name", "price", "date"]
    urls = [f"https://s{i // 3 % 7}.example/p{i // 3}.html?sort={sorts[i % 3]}" for i in range(3_000)]
    crawler = UrlDedup(5_000, 1e-9, similarity="crawler")
    page = UrlDedup(5_000, 1e-9, similarity="page")
    outcomes = [crawler.check_and_insert(u) for u in urls]
    assert outcomes == [page.check_and_insert(u) for u in urls]
    assert outcomes.count(Outcome.SIMILAR) == 2_000
    assert page.memory_bytes < crawler.memory_bytes


def test_similarity_takes_a_rate_of_its_own():
    urls = [f"https://s{i % 40}.example/d{i}/p.html?ref={i % 3}" for i in range(2_000)]
    # A fixed key: at 1e-4 over 2,000 lookups a chance match has a few percent's chance for a
    # random key; with this key there is none, always.
    key = b"similarity rate."
    strict = UrlDedup(5_000, 1e-9, similarity="crawler", hash_key=key)
    loose = UrlDedup(
        5_000, 1e-9, similarity="crawler", similarity_false_positive_rate=1e-4, hash_key=key
    )
    assert "similarity_false_positive_rate=0.0001" in repr(loose)
    # The same folds on a list without chance matches, in less memory.
    assert [strict.check_and_insert(u) for u in urls] == [loose.check_and_insert(u) for u in urls]
    assert loose.memory_bytes * 2 < strict.memory_bytes
    with pytest.raises(ValueError, match="similarity preset"):
        UrlDedup(similarity_false_positive_rate=1e-4)
    with pytest.raises(FilterError):
        UrlDedup(similarity="crawler", similarity_false_positive_rate=2.0)


def test_options_are_checked():
    with pytest.raises(FilterError):
        UrlDedup(false_positive_rate=2.0)
    with pytest.raises(ValueError, match="growing"):
        UrlDedup(filter="cuckoo")
    with pytest.raises(ValueError, match="16 bytes"):
        UrlDedup(hash_key=b"short")
    assert "filter=\"exact\"" in repr(UrlDedup(filter="exact"))


@pytest.mark.parametrize("kind", ["growing", "segmented", "classic", "exact"])
def test_snapshots_round_trip_through_files_and_bytes(tmp_path, kind):
    d = UrlDedup(10_000, 1e-4, filter=kind)
    urls = [f"https://example.com/page/{i}" for i in range(2_000)]
    d.check_and_insert_batch(urls)
    path = tmp_path / "seen.udd"
    d.save(path)
    assert not [p for p in os.listdir(tmp_path) if p != "seen.udd"], "temporary file left"
    for restored in (UrlDedup.load(path, filter=kind), UrlDedup.from_bytes(d.to_bytes(), filter=kind)):
        assert all(a is Outcome.DUPLICATE for a in restored.check_and_insert_batch(urls))
        assert restored.check_and_insert("https://example.com/new") is Outcome.NEW
    # Saving again replaces the file whole.
    d.save(str(path))
    assert UrlDedup.load(str(path), filter=kind).contains(urls[0])


def test_state_files_are_private_and_never_written_through_a_link(tmp_path):
    path = tmp_path / "seen.udd"
    UrlDedup(1_000).save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Links planted where the state goes, or where a temporary file of a predictable name
    # would go, are never written through.
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    for planted in (path, tmp_path / f"seen.udd.tmp-{os.getpid()}"):
        planted.unlink(missing_ok=True)
        planted.symlink_to(target)
        UrlDedup(1_000).save(path)
        assert target.read_bytes() == b"keep"
    assert not path.is_symlink() and UrlDedup.load(path).expected_urls == 1_000


def test_a_snapshot_refuses_another_configuration(tmp_path):
    path = tmp_path / "seen.udd"
    UrlDedup(1_000, canonicalization=None).save(path)
    with pytest.raises(ConfigMismatchError) as info:
        UrlDedup.load(path)
    assert "byte for byte" in info.value.recorded
    assert "Policy" in info.value.configured
    assert isinstance(info.value, SnapshotError)
    UrlDedup.load(path, accept_config_change=True)


def test_damaged_or_missing_snapshots_raise(tmp_path):
    data = UrlDedup(1_000).to_bytes()
    with pytest.raises(SnapshotError):
        UrlDedup.from_bytes(data[:-3])
    with pytest.raises(SnapshotError):
        UrlDedup.from_bytes(b"not a snapshot at all")
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(SnapshotError):
        UrlDedup.from_bytes(bytes(damaged))
    with pytest.raises(FileNotFoundError) as info:
        UrlDedup.load(tmp_path / "missing.udd")
    assert info.value.filename.endswith("missing.udd")
    with pytest.raises(OSError):
        UrlDedup(1_000).save(tmp_path / "no-such-dir" / "seen.udd")


def test_figures():
    d = UrlDedup(1_000, 0.01)
    assert d.expected_urls == 1_000
    assert d.false_positive_rate == 0.0
    for i in range(10_000):
        d.check_and_insert(f"https://example.com/{i}")
    # Ten times the expected count, and the growing filter keeps its rate.
    assert d.false_positive_rate < 0.01
    assert abs(d.estimated_urls - 10_000) < 500
    assert 0 < d.memory_bytes < 10_000 * 8
    assert not d.is_over_capacity


def test_a_fixed_hash_key_makes_runs_reproducible():
    key = bytes(range(16))
    a, b = UrlDedup(1_000, hash_key=key), UrlDedup(1_000, hash_key=key)
    a.check_and_insert("https://example.com/")
    b.check_and_insert("https://example.com/")
    assert a.to_bytes() == b.to_bytes()


def test_threads_sharing_one_deduplicator_admit_each_url_once():
    d = UrlDedup(100_000, 1e-6)
    urls = [f"https://example.com/{i}" for i in range(20_000)]
    admitted: list[list[str]] = [[] for _ in range(4)]

    def work(t: int) -> None:
        rotated = urls[t * 5_000 :] + urls[: t * 5_000]
        for start in range(0, len(rotated), 500):
            chunk = rotated[start : start + 500]
            for url, answer in zip(chunk, d.check_and_insert_batch(chunk)):
                if answer is Outcome.NEW:
                    admitted[t].append(url)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [u for a in admitted for u in a]
    assert len(every) == len(set(every)) == len(urls)


def test_shared_filter_in_redis(redis_url):
    key = bytes(range(16))
    a = UrlDedup(10_000, redis=redis_url, redis_prefix="bindings", hash_key=key)
    # A key given by the creator stays out of Redis: a process without it cannot join.
    with pytest.raises(url_dedup.RedisError, match="key"):
        UrlDedup(5, redis=redis_url, redis_prefix="bindings")
    # One with it adopts the filter's size, whatever it asks for.
    b = UrlDedup(5, redis=redis_url, redis_prefix="bindings", hash_key=key)
    # Without a key, the first process's random one is shared through Redis.
    UrlDedup(10, redis=redis_url, redis_prefix="random-key").check_and_insert("https://x.example/")
    joined = UrlDedup(10, redis=redis_url, redis_prefix="random-key")
    assert joined.check_and_insert("https://x.example/") is Outcome.DUPLICATE
    assert a.redis == redis_url and a.redis_prefix == "bindings"
    assert a.check_and_insert("https://example.com/x") is Outcome.NEW
    assert b.check_and_insert("https://EXAMPLE.com/x#y") is Outcome.DUPLICATE
    assert b.check_and_insert_batch(["https://example.com/x", "https://example.com/z"]) == [
        Outcome.DUPLICATE,
        Outcome.NEW,
    ]
    assert a.contains("https://example.com/z")
    assert math.isnan(a.estimated_urls)
    assert a.memory_bytes > 0
    # A backup of the shared filter seeds another prefix created with the same size and key.
    state = a.to_bytes()
    c = UrlDedup.from_bytes(state, 10_000, redis=redis_url, redis_prefix="restored", hash_key=key)
    assert c.check_and_insert("https://example.com/z") is Outcome.DUPLICATE


def test_an_unreachable_redis_raises_redis_error():
    from processes import free_port

    with pytest.raises(url_dedup.RedisError) as info:
        UrlDedup(1_000, redis=f"redis://127.0.0.1:{free_port()}/0", redis_prefix="down")
    assert isinstance(info.value, ConnectionError)


def test_the_package_docstring_examples_run():
    import doctest

    failures, tried = doctest.testmod(url_dedup)
    assert tried > 0 and failures == 0
