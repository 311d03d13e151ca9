"""harvest-gui --codec: an encoded file opens with its codec, and says CodecRequired without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvest_engine import CodecRequired, SqliteRuntime
from harvest_gui import target
from harvest_gui.__main__ import parse_args
from tests.engine.codec_keys import AES

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(autouse=True)
def plain_again() -> Iterator[None]:
    yield
    target.use_codec(None)


def test_the_launch_codec_opens_an_encoded_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.db"
    SqliteRuntime.open(path, codec=AES).close()
    with pytest.raises(CodecRequired):
        target.open_reader(path)
    parse_args([str(path), "--read-only", "--codec", "tests.engine.codec_keys:AES"])
    with target.open_reader(path) as reader:
        assert reader.list_executions().executions == []


def test_a_codec_that_is_not_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as ended:
        parse_args(["x.db", "--codec", "tests.engine.codec_keys:KEY"])
    assert ended.value.code == 2
    assert "not a codec" in capsys.readouterr().err
