"""Logs are served with the job's secret values masked, however the bytes fall into chunks."""

from jobs.logs import Masker


def test_it_masks_every_occurrence():
    assert Masker(["s3cret"]).mask(b"a s3cret and s3cret") == b"a ****** and ******"


def test_it_masks_a_secret_split_across_chunks():
    text = b"before s3cret-value after " * 50
    for size in range(1, 20):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert b"".join(Masker(["s3cret-value"]).chunks(chunks)) == text.replace(b"s3cret-value", b"******")


def test_it_masks_the_longer_of_two_overlapping_secrets():
    assert Masker(["abc", "abcdef"]).mask(b"xabcdefx") == b"x******x"


def test_it_passes_a_log_through_without_secrets():
    assert b"".join(Masker([]).chunks([b"a", b"b"])) == b"ab"
