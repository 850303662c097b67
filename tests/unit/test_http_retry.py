"""kgsearch.http: Retry-After parsing and the wait before each retry (pure, no server)."""

from __future__ import annotations

import email.utils

import pytest

from kgsearch.http import RetryPolicy, retry_after_seconds

NOW = 1_750_000_000.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("2", 2.0),
        ("0.25", 0.25),
        (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),
        (email.utils.formatdate(NOW - 5, usegmt=True), -5.0),
        ("soon", None),
    ],
)
def test_retry_after_is_seconds_or_an_http_date(value: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(value, now=NOW) == seconds


@pytest.mark.parametrize(
    ("attempt", "retry_after", "delay"),
    [
        (0, None, 0.5),
        (2, None, 2.0),
        (2, "3", 3.0),
        (0, "0", 0.0),
        (1, "60", 60.0),
        (1, "61", 1.0),  # longer than the cap: back off instead of stalling
        (1, "-1", 1.0),
        (1, "nan", 1.0),
        (1, "Wed, 21 Oct 2065 07:28:00 GMT", 1.0),
    ],
)
def test_delay_honours_a_reasonable_retry_after_else_backs_off(
    attempt: int, retry_after: str | None, delay: float
) -> None:
    assert RetryPolicy(backoff=0.5).delay(attempt, retry_after) == delay
