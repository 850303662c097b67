"""Store URLs shown without their password (``kgsearch stats``, ``config show``, errors)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgsearch.urls import MASK, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://kg:s3cret@db:5432/kg?sslmode=require",
            f"postgresql://kg:{MASK}@db:5432/kg?sslmode=require",
        ),
        ("postgres://kg@db/kg", "postgres://kg@db/kg"),
        (
            "postgresql://db/kg?user=kg&password=s3cret&schema=s",
            f"postgresql://db/kg?user=kg&password={MASK}&schema=s",
        ),
        ("host=db password=s3cret user=kg", f"host=db password={MASK} user=kg"),
        ("host=db password='s3 cret' user=kg", f"host=db password={MASK} user=kg"),
        ("postgresql://kg:s3cret@db:port/kg", f"postgresql://kg:{MASK}@db:port/kg"),
        ("sqlite:///data/kgsearch.db", "sqlite:///data/kgsearch.db"),
        ("kgsearch.db", "kgsearch.db"),
        (":memory:", ":memory:"),
    ],
)
def test_the_password_is_masked_and_the_rest_kept(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@given(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=4, max_size=30))
def test_no_password_survives_in_the_user_part(password: str) -> None:
    url = f"postgresql://kg:{password}@db.example:5432/kgsearch"
    assert redact_url(url) == f"postgresql://kg:{MASK}@db.example:5432/kgsearch"


def test_a_model_mismatch_names_the_store_without_its_password() -> None:
    from kgsearch.errors import ConfigError, DimensionMismatch
    from kgsearch.store.common import check_embedding_model

    url = "postgresql://kg:s3cret@db/kg"
    with pytest.raises(ConfigError) as other_model:
        check_embedding_model(url, "bundled", 384, "openai:text-embedding-3-small", 384)
    with pytest.raises(DimensionMismatch) as other_dims:
        check_embedding_model(url, "bundled", 384, "bundled", 768)
    for raised in (other_model, other_dims):
        assert "s3cret" not in raised.value.message
        assert f"postgresql://kg:{MASK}@db/kg" in raised.value.message
