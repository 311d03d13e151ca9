"""Codecs the payload-codec tests and the CLI's --codec name (tests.engine.codec_keys:AES)."""

from __future__ import annotations

from harvest_engine.codecs import AesGcmCodec, GzipCodec

KEY = bytes(range(32))
AES = AesGcmCodec(KEY)
"""The key the encrypted test files are written with."""

WRONG = AesGcmCodec(bytes(32))
"""Another key: it must not read them."""

GZIP = GzipCodec()
